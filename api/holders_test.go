package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// TestHoldersThroughTheAPI: the holders setting is read and changed with
// PATCH; every holder is told "leader" with its own term; the leader read,
// the election and every heartbeat answer list the holders, and leave
// holders out with one slot; lowering ends the newest holdership and
// raising fills the slot again once its promise lapsed.
func TestHoldersThroughTheAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	if s := e.do("PATCH", "/v1/elections/sched", `{"holders":2}`).expect(t, http.StatusOK).json(t)["settings"].(map[string]any); s["holders"] != float64(2) {
		t.Fatalf("settings %v, want holders 2", s)
	}
	toks := map[string]string{}
	terms := map[string]float64{}
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		m := e.do("POST", "/v1/elections/sched/candidates", map[string]any{"id": id, "ttl": "1m"}).expect(t, http.StatusCreated).json(t)
		toks[id], terms[id] = m["token"].(string), m["term"].(float64)
	}
	for _, id := range []string{"node-a", "node-b"} {
		m := e.do("PUT", "/v1/elections/sched/candidates/"+id+"/heartbeat", nil, token(toks[id])).expect(t, http.StatusOK).json(t)
		hs, _ := m["holders"].([]any)
		if m["state"] != "leader" || m["term"] != terms[id] || len(hs) != 2 || m["leader"].(map[string]any)["id"] != "node-a" {
			t.Fatalf("heartbeat of holder %s: %v; want leader in its own term %v, node-a the leader, 2 holders", id, m, terms[id])
		}
	}
	if terms["node-b"] <= terms["node-a"] {
		t.Fatalf("terms %v: want node-b's after node-a's", terms)
	}
	m := e.do("PUT", "/v1/elections/sched/candidates/node-c/heartbeat", nil, token(toks["node-c"])).expect(t, http.StatusOK).json(t)
	if m["state"] != "follower" || m["position"] != float64(2) || m["term"] != terms["node-b"] {
		t.Fatalf("heartbeat of node-c: %v; want a follower at 2 under the last term", m)
	}
	l := e.do("GET", "/v1/elections/sched/leader", nil).expect(t, http.StatusOK).json(t)
	hs := l["holders"].([]any)
	if l["id"] != "node-a" || len(hs) != 2 || hs[1].(map[string]any)["id"] != "node-b" || hs[1].(map[string]any)["term"] != terms["node-b"] {
		t.Fatalf("leader read %v: want node-a, and node-a, node-b as holders", l)
	}
	if el := e.do("GET", "/v1/elections/sched", nil).expect(t, http.StatusOK).json(t); len(el["holders"].([]any)) != 2 {
		t.Fatalf("election %v: want 2 holders", el)
	}

	// Lowered to 1: node-b's holdership ends; raised again, its slot waits
	// for node-b's promise (a minute), so nobody else is promoted now.
	e.do("PATCH", "/v1/elections/sched", `{"holders":1}`).expect(t, http.StatusOK)
	if m := e.do("PUT", "/v1/elections/sched/candidates/node-b/heartbeat", nil, token(toks["node-b"])).expect(t, http.StatusOK).json(t); m["state"] != "follower" || m["holders"] != nil {
		t.Fatalf("node-b after lowering to 1: %v; want a follower, and no holders listed with one slot", m)
	}
	if l := e.do("GET", "/v1/elections/sched/leader", nil).expect(t, http.StatusOK).json(t); l["holders"] != nil {
		t.Fatalf("leader read with one slot lists holders: %v", l)
	}
	el := e.do("PATCH", "/v1/elections/sched", `{"holders":2}`).expect(t, http.StatusOK).json(t)
	if hs := el["holders"].([]any); len(hs) != 1 || el["handover_until"] == nil {
		t.Fatalf("raised again at once: %v; want one holder and the freed slot held (handover_until)", el)
	}
	if s := e.do("PATCH", "/v1/elections/sched", `{"holders":null}`).expect(t, http.StatusOK).json(t)["settings"].(map[string]any); s["holders"] != float64(1) {
		t.Fatalf("holders reset with null: %v, want the default 1", s)
	}
}

func TestHoldersSettingIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	for _, body := range []string{`{"holders":0}`, `{"holders":65}`, `{"holders":-1}`, `{"holders":"2"}`, `{"holders":1.5}`} {
		p := e.do("PATCH", "/v1/elections/bad", body).expect(t, http.StatusBadRequest)
		if m := p.json(t); p.problemType(t) != "invalid-request" || m["field"] != "holders" {
			t.Fatalf("PATCH %s: %s, want invalid-request naming holders", body, p.Body)
		}
	}
	if _, err := e.gw.Election(context.Background(), "bad"); err == nil {
		t.Fatal("a refused PATCH created the election")
	}
}

// TestTransferFromAHolder: with several holders an operator names the
// holder that hands over; a holder asks with its own token.
func TestTransferFromAHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.do("PATCH", "/v1/elections/tf", `{"holders":2}`).expect(t, http.StatusOK)
	toks := map[string]string{}
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		toks[id] = e.campaign("tf", id, "1m")
	}
	p := e.do("POST", "/v1/elections/tf/transfer", `{"to":"node-c"}`).expect(t, http.StatusBadRequest)
	if m := p.json(t); m["field"] != "from" {
		t.Fatalf("an operator's transfer naming no holder: %s; want invalid-request naming from", p.Body)
	}
	if p := e.do("POST", "/v1/elections/tf/transfer", `{"to":"node-c","from":"node-c"}`).expect(t, http.StatusConflict); p.problemType(t) != "not-leader" {
		t.Fatalf("a transfer from a follower: %s", p.Body)
	}
	el := e.do("POST", "/v1/elections/tf/transfer", `{"to":"node-c","from":"node-b"}`).expect(t, http.StatusAccepted).json(t)
	if tr := el["transfer"].(map[string]any); tr["from"] != "node-b" || tr["to"] != "node-c" {
		t.Fatalf("transfer %v: want from node-b to node-c", tr)
	}
	e.do("PUT", "/v1/elections/tf/candidates/node-a/heartbeat", nil, token(toks["node-a"])).expect(t, http.StatusOK)
	e.do("PUT", "/v1/elections/tf/candidates/node-b/heartbeat", nil, token(toks["node-b"])).expect(t, http.StatusConflict)
	e.do("POST", "/v1/elections/tf/candidates/node-b/handover", nil, token(toks["node-b"])).expect(t, http.StatusOK)
	l := e.do("GET", "/v1/elections/tf/leader", nil).expect(t, http.StatusOK).json(t)
	if hs := l["holders"].([]any); len(hs) != 2 || hs[0].(map[string]any)["id"] != "node-a" || hs[1].(map[string]any)["id"] != "node-c" {
		t.Fatalf("holders %v after the handover, want node-a and node-c", l["holders"])
	}
	// node-c asks with its own token, naming nobody.
	el = e.do("POST", "/v1/elections/tf/transfer", `{"to":"node-b"}`, token(toks["node-c"])).expect(t, http.StatusAccepted).json(t)
	if tr := el["transfer"].(map[string]any); tr["from"] != "node-c" {
		t.Fatalf("transfer %v: want from node-c, whose token asked", tr)
	}
}

// oneHolder is a backend that says it takes one holder per election:
// the Gateway refuses more before the backend sees them.
type oneHolder struct{ *memory.Backend }

// MaxHolders implements gateway.MultiHolder.
func (oneHolder) MaxHolders() int { return 1 }

// TestHoldersOnBackendWithoutThemIsNotSupported: a backend that holds one
// holder only refuses more, as a setting or as the default, naming itself.
func TestHoldersOnBackendWithoutThemIsNotSupported(t *testing.T) {
	t.Parallel()
	gw := gateway.New(oneHolder{memory.New()}, gateway.Config{})
	srv := httptest.NewServer(New(gw, Config{}))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv, gw: gw, log: &syncBuffer{}}
	p := e.do("PATCH", "/v1/elections/one", `{"holders":2}`).expect(t, http.StatusNotImplemented)
	if m := p.json(t); p.problemType(t) != "not-supported" || m["backend"] == nil {
		t.Fatalf("problem %s", p.Body)
	}
	e.do("PATCH", "/v1/elections/one", `{"holders":1}`).expect(t, http.StatusOK)

	d := gateway.DefaultSettings()
	d.Holders = 3
	gw = gateway.New(oneHolder{memory.New()}, gateway.Config{Defaults: &d})
	srv2 := httptest.NewServer(New(gw, Config{}))
	t.Cleanup(srv2.Close)
	e = &env{t: t, srv: srv2, gw: gw, log: &syncBuffer{}}
	if p := e.do("POST", "/v1/elections/one/candidates", `{"id":"node-a"}`).expect(t, http.StatusNotImplemented); p.problemType(t) != "not-supported" {
		t.Fatalf("campaign with default holders 3: %s", p.Body)
	}
}
