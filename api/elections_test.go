package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/webhooks"
)

func TestElectionsListAndGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	if got := e.do("GET", "/v1/elections", nil).expect(t, http.StatusOK).json(t)["elections"].([]any); len(got) != 0 {
		t.Errorf("elections of a fresh gateway: %v", got)
	}
	e.campaign("zeta", "node-a", "1m")
	e.campaign("alpha", "node-a", "1m")
	e.campaign("alpha", "node-b", "1m")

	list := e.do("GET", "/v1/elections", nil).expect(t, http.StatusOK).json(t)["elections"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "alpha" || list[1].(map[string]any)["name"] != "zeta" {
		t.Fatalf("elections %v, want alpha then zeta", list)
	}
	m := e.do("GET", "/v1/elections/alpha", nil).expect(t, http.StatusOK).json(t)
	s := m["settings"].(map[string]any)
	if m["name"] != "alpha" || m["term"] != 1.0 || m["candidates"] != 2.0 || s["error_cooldown"] != "10s" || s["handover_delay"] != "0s" {
		t.Errorf("election %v", m)
	}
	if l := m["leader"].(map[string]any); l["id"] != "node-a" || l["term"] != 1.0 {
		t.Errorf("leader %v", l)
	}
	if _, ok := m["handover_until"]; ok {
		t.Errorf("handover_until without a handover: %v", m)
	}
}

func TestPatchCreatesAndConfiguresElection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	m := e.do("PATCH", "/v1/elections/billing", `{"error_cooldown":"5s","handover_delay":"2s"}`,
		contentType("application/merge-patch+json")).expect(t, http.StatusOK).json(t)
	s := m["settings"].(map[string]any)
	if m["name"] != "billing" || s["error_cooldown"] != "5s" || s["handover_delay"] != "2s" || m["leader"] != nil || m["candidates"] != 0.0 {
		t.Errorf("created election %v", m)
	}
	// A member left out stays; application/json is accepted too.
	s = e.do("PATCH", "/v1/elections/billing", `{"handover_delay":"1m30s"}`).expect(t, http.StatusOK).json(t)["settings"].(map[string]any)
	if s["error_cooldown"] != "5s" || s["handover_delay"] != "1m30s" {
		t.Errorf("after a partial patch: %v", s)
	}
	// null goes back to the default; {} changes nothing.
	s = e.do("PATCH", "/v1/elections/billing", `{"error_cooldown":null}`).expect(t, http.StatusOK).json(t)["settings"].(map[string]any)
	if s["error_cooldown"] != "10s" || s["handover_delay"] != "1m30s" {
		t.Errorf("after a null patch: %v", s)
	}
	s = e.do("PATCH", "/v1/elections/billing", `{}`).expect(t, http.StatusOK).json(t)["settings"].(map[string]any)
	if s["error_cooldown"] != "10s" || s["handover_delay"] != "1m30s" {
		t.Errorf("after an empty patch: %v", s)
	}
	if got := e.do("GET", "/v1/elections/billing/leader", nil).expect(t, http.StatusNotFound).problemType(t); got != "no-leader" {
		t.Errorf("leader of a configured election without candidates: %s", got)
	}
}

func TestNoLeaderDuringHandoverDelayTellsWhenItEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.do("PATCH", "/v1/elections/slow", `{"handover_delay":"1m"}`).expect(t, http.StatusOK)
	e.campaign("slow", "node-a", "1s")
	e.campaign("slow", "node-b", "1h")
	var p map[string]any
	eventually.True(t, 5*time.Second, "node-a to expire", func() bool {
		r := e.do("GET", "/v1/elections/slow/leader", nil)
		if r.Status != http.StatusNotFound {
			return false
		}
		p = r.json(t)
		return true
	})
	until, err := time.Parse(time.RFC3339Nano, p["handover_until"].(string))
	if err != nil || p["type"] != ProblemTypePrefix+"no-leader" || time.Until(until) < 30*time.Second {
		t.Errorf("no-leader problem %v", p)
	}
	m := e.do("GET", "/v1/elections/slow", nil).expect(t, http.StatusOK).json(t)
	if m["handover_until"] != p["handover_until"] || m["leader"] != nil {
		t.Errorf("election during the handover: %v", m)
	}
	st := e.do("GET", "/v1/elections/slow/candidates/node-b", nil).expect(t, http.StatusOK).json(t)
	if st["position"] != 0.0 || st["state"] != "follower" || st["leader"] != nil {
		t.Errorf("next leader during the handover: %v", st)
	}
}

func TestProbes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.do("GET", "/healthz", nil).expect(t, http.StatusOK)
	e.do("GET", "/readyz", nil).expect(t, http.StatusOK)
}

func TestRequestLogHasRouteAndNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{LogRequests: true})
	tok := e.campaign("logs", "node-a", "1m")
	r := e.do("PUT", "/v1/elections/logs/candidates/node-a/heartbeat", nil, token(tok)).expect(t, http.StatusOK)
	id := r.Header.Get("X-Request-Id")
	if id == "" {
		t.Fatal("no X-Request-Id header")
	}
	logs := e.log.String()
	if strings.Contains(logs, tok) || strings.Contains(logs, strings.TrimPrefix(tok, "ect_")) {
		t.Error("the candidate token is in the log")
	}
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"request_id":"`+id+`"`) && strings.Contains(l, `"msg":"request"`) {
			line = l
		}
	}
	for _, want := range []string{`"method":"PUT"`, `"route":"/v1/elections/{election}/candidates/{id}/heartbeat"`, `"status":200`, `"duration":`} {
		if !strings.Contains(line, want) {
			t.Errorf("request log line %q lacks %s", line, want)
		}
	}
}

// TestRequestLogIsOffByDefaultButServerErrorsAreLogged: without
// LogRequests no request gets a line, heartbeats and probes included; an
// answer with a 5xx status still does.
func TestRequestLogIsOffByDefaultButServerErrorsAreLogged(t *testing.T) {
	t.Parallel()
	b := memory.New()
	gw := gateway.New(b, gateway.Config{})
	logs := &syncBuffer{}
	// The webhook outbox is checked but never runs: /readyz answers 503.
	hooks := webhooks.New(gw, b, webhooks.Config{})
	srv := httptest.NewServer(New(gw, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil)), Webhooks: hooks, CheckOutbox: true}))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv, gw: gw, log: logs}
	tok := e.campaign("quiet", "node-a", "1m")
	for range 3 {
		e.do("PUT", "/v1/elections/quiet/candidates/node-a/heartbeat", nil, token(tok)).expect(t, http.StatusOK)
	}
	e.do("GET", "/v1/elections/quiet/leader", nil).expect(t, http.StatusOK)
	e.do("GET", "/healthz", nil).expect(t, http.StatusOK)
	if l := logs.String(); strings.Contains(l, `"msg":"request"`) {
		t.Fatalf("request lines logged without LogRequests:\n%s", l)
	}
	e.do("GET", "/readyz", nil).expect(t, http.StatusServiceUnavailable)
	if l := logs.String(); !strings.Contains(l, `"level":"ERROR","msg":"request"`) || !strings.Contains(l, `"route":"/readyz","status":503`) {
		t.Fatalf("the 503 was not logged:\n%s", l)
	}
}

// TestDeleteElectionOnlyWhenEmptyAndTermsGoOn: an election with a candidate
// is not deleted; an empty one is, and disappears from reads and lists; a
// campaign creates it again with terms above the deleted one's.
func TestDeleteElectionOnlyWhenEmptyAndTermsGoOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	tok := e.campaign("retired", "a", "1m")
	_, term := e.leader("retired")
	p := e.do("DELETE", "/v1/elections/retired", nil).expect(t, http.StatusConflict).json(t)
	if p["type"] != ProblemTypePrefix+"election-not-empty" {
		t.Fatalf("deleting an election with a leader: %v", p)
	}
	e.do("DELETE", "/v1/elections/retired/candidates/a", nil, token(tok)).expect(t, http.StatusNoContent)
	e.do("DELETE", "/v1/elections/retired", nil).expect(t, http.StatusNoContent)
	e.do("GET", "/v1/elections/retired", nil).expect(t, http.StatusNotFound)
	e.do("DELETE", "/v1/elections/retired", nil).expect(t, http.StatusNotFound)
	list := e.do("GET", "/v1/elections", nil).expect(t, http.StatusOK).json(t)
	for _, x := range list["elections"].([]any) {
		if x.(map[string]any)["name"] == "retired" {
			t.Fatal("a deleted election is still listed")
		}
	}
	e.campaign("retired", "b", "1m")
	if _, again := e.leader("retired"); again <= term {
		t.Fatalf("term %v after re-creation, want above the deleted election's %v", again, term)
	}
}
