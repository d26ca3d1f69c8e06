package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
)

func TestWalkthroughResignHandsOverToNextInLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})

	r := e.do("POST", "/v1/elections/billing/candidates",
		`{"id":"node-a","ttl":"1m","metadata":{"addr":"10.0.0.7:8080"}}`).expect(t, http.StatusCreated)
	if loc := r.Header.Get("Location"); loc != "/v1/elections/billing/candidates/node-a" {
		t.Errorf("Location %q", loc)
	}
	a := r.json(t)
	if a["state"] != "leader" || a["position"] != 0.0 || a["term"] != 1.0 || a["ttl"] != "1m0s" {
		t.Errorf("first candidate: %s", r.Body)
	}
	if !strings.HasPrefix(a["token"].(string), "ect_") {
		t.Errorf("token %q", a["token"])
	}
	if l := a["leader"].(map[string]any); l["id"] != "node-a" || l["metadata"].(map[string]any)["addr"] != "10.0.0.7:8080" {
		t.Errorf("leader %v", l)
	}

	r = e.do("POST", "/v1/elections/billing/candidates", `{"id":"node-b"}`).expect(t, http.StatusCreated)
	b := r.json(t)
	if b["state"] != "follower" || b["position"] != 1.0 || b["ttl"] != "10s" || b["leader"].(map[string]any)["id"] != "node-a" {
		t.Errorf("second candidate: %s", r.Body)
	}
	if id, term := e.leader("billing"); id != "node-a" || term != 1 {
		t.Errorf("leader %s term %v, want node-a term 1", id, term)
	}

	e.do("DELETE", "/v1/elections/billing/candidates/node-a", nil, token(a["token"].(string))).expect(t, http.StatusNoContent)
	if id, term := e.leader("billing"); id != "node-b" || term != 2 {
		t.Errorf("after resign: leader %s term %v, want node-b term 2", id, term)
	}
	hb := e.do("PUT", "/v1/elections/billing/candidates/node-b/heartbeat", nil, token(b["token"].(string))).expect(t, http.StatusOK).json(t)
	if hb["state"] != "leader" || hb["term"] != 2.0 || hb["position"] != 0.0 {
		t.Errorf("heartbeat of the new leader: %v", hb)
	}
	if _, ok := hb["token"]; ok {
		t.Error("a heartbeat must not echo the token")
	}
}

func TestHeartbeatExtendsExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	tok := e.campaign("hb", "node-a", "5s")
	before := e.do("GET", "/v1/elections/hb/candidates/node-a", nil).expect(t, http.StatusOK).json(t)["expires_at"].(string)
	t0, err := time.Parse(time.RFC3339Nano, before)
	if err != nil {
		t.Fatal(err)
	}
	// expires_at is the last heartbeat (here the campaign) plus the TTL:
	// once the clock is past that heartbeat, a new one must move it.
	eventually.True(t, 5*time.Second, "the clock to pass the campaign", func() bool { return time.Now().Add(5 * time.Second).After(t0) })
	after := e.do("PUT", "/v1/elections/hb/candidates/node-a/heartbeat", nil, token(tok)).expect(t, http.StatusOK).json(t)["expires_at"].(string)
	t1, _ := time.Parse(time.RFC3339Nano, after)
	if !t1.After(t0) {
		t.Errorf("expires_at %s did not move past %s", after, before)
	}
}

func TestGetCandidateHasNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.campaign("one", "node-a", "1m")
	m := e.do("GET", "/v1/elections/one/candidates/node-a", nil).expect(t, http.StatusOK).json(t)
	if m["id"] != "node-a" || m["state"] != "leader" {
		t.Errorf("candidate %v", m)
	}
	if _, ok := m["token"]; ok {
		t.Error("GET of a candidate leaks its token")
	}
	if got := e.do("GET", "/v1/elections/one/candidates/node-z", nil).expect(t, http.StatusNotFound).problemType(t); got != "candidate-not-found" {
		t.Errorf("unknown candidate: %s", got)
	}
}

func TestReportErrorHandsOverAndCoolsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.do("PATCH", "/v1/elections/jobs", `{"error_cooldown":"1m"}`).expect(t, http.StatusOK)
	a := e.campaign("jobs", "node-a", "1m")
	b := e.campaign("jobs", "node-b", "1m")

	r := e.do("POST", "/v1/elections/jobs/candidates/node-a/error", `{"reason":"begin hook exited 1"}`, token(a)).expect(t, http.StatusOK).json(t)
	if r["state"] != "error" || r["position"] != -1.0 || r["cooldown_until"] == nil || r["leader"].(map[string]any)["id"] != "node-b" {
		t.Errorf("after error report: %v", r)
	}
	if id, term := e.leader("jobs"); id != "node-b" || term != 2 {
		t.Errorf("leader %s term %v, want node-b term 2", id, term)
	}
	list := e.do("GET", "/v1/elections/jobs/candidates", nil).expect(t, http.StatusOK).json(t)
	cs := list["candidates"].([]any)
	first, last := cs[0].(map[string]any), cs[len(cs)-1].(map[string]any)
	if first["id"] != "node-b" || first["term"] != 2.0 || last["id"] != "node-a" || last["position"] != -1.0 || last["cooldown_until"] == nil {
		t.Errorf("candidates %s", e.do("GET", "/v1/elections/jobs/candidates", nil).Body)
	}

	// An empty body is a report without a reason; with nobody left in
	// line, the election has no leader.
	r = e.do("POST", "/v1/elections/jobs/candidates/node-b/error", nil, token(b)).expect(t, http.StatusOK).json(t)
	if r["state"] != "error" || r["leader"] != nil {
		t.Errorf("after the second error report: %v", r)
	}
	if got := e.do("GET", "/v1/elections/jobs/leader", nil).expect(t, http.StatusNotFound).problemType(t); got != "no-leader" {
		t.Errorf("leader of an election with everybody in error: %s", got)
	}
}

func TestCandidatesInLineOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	for _, id := range []string{"c", "a", "b"} {
		e.campaign("line", id, "1m")
	}
	m := e.do("GET", "/v1/elections/line/candidates", nil).expect(t, http.StatusOK).json(t)
	if m["election"] != "line" || m["term"] != 1.0 {
		t.Errorf("list %v", m)
	}
	for i, want := range []string{"c", "a", "b"} {
		c := m["candidates"].([]any)[i].(map[string]any)
		if c["id"] != want || c["position"] != float64(i) {
			t.Errorf("candidate %d: %v, want %s at %d", i, c, want, i)
		}
		if _, has := c["term"]; has != (i == 0) {
			t.Errorf("candidate %d: term present %v", i, has)
		}
		if _, ok := c["metadata"].(map[string]any); !ok {
			t.Errorf("candidate %d: metadata %v is not an object", i, c["metadata"])
		}
	}
}
