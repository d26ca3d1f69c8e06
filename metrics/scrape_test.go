package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/metrics"
)

// server is a gateway over a memory backend with its metrics, served over
// real HTTP.
type server struct {
	t   *testing.T
	url string
	m   *metrics.Metrics
}

// newServer wires a memory backend, a gateway observed by the metrics, the
// transitions watcher and the API as serve does: the watcher counts from
// the backend's head as Gateway.Begin noted it, before any request.
// Everything stops at the end of the test.
func newServer(t *testing.T, opts ...metrics.Option) *server {
	return newServerAfter(t, nil, opts...)
}

// newServerAfter is newServer that calls early between Begin and the
// start of the gateway's and the watcher's goroutines.
func newServerAfter(t *testing.T, early func(*gateway.Gateway), opts ...metrics.Option) *server {
	t.Helper()
	discard := slog.New(slog.DiscardHandler)
	m := metrics.New(append(opts, metrics.WithLogger(discard))...)
	gw := gateway.New(m.ObserveBackend(memory.New()), gateway.Config{
		Logger:   discard,
		Defaults: &gateway.Settings{ErrorCooldown: time.Hour},
	})
	transitions := m.ObserveGateway(gw)
	ctx, cancel := context.WithCancel(context.Background())
	origin, err := gw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if early != nil {
		early(gw)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = gw.Run(ctx) })
	wg.Go(func() { _ = transitions.RunAfter(ctx, origin) })
	srv := httptest.NewServer(api.New(gw, api.Config{Logger: discard, Metrics: m}))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		wg.Wait()
	})
	return &server{t: t, url: srv.URL, m: m}
}

// TestTransitionsCountFromTheirCursor: RunAfter counts the transitions
// after its cursor that came before it started.
func TestTransitionsCountFromTheirCursor(t *testing.T) {
	s := newServerAfter(t, func(gw *gateway.Gateway) {
		if _, _, err := gw.Campaign(context.Background(), "early", gateway.CampaignRequest{ID: "a"}); err != nil {
			t.Fatal(err)
		}
	})
	s.waitFor(`elector_leader_transitions_total{election="early",reason="none",type="leader.begin"} 1`)
}

// do sends a request and returns the status and the decoded JSON body.
func (s *server) do(method, path, token, body string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set(api.TokenHeader, token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(res.Body).Decode(&doc)
	return res.StatusCode, doc
}

// campaign campaigns id into election and returns its token.
func (s *server) campaign(election, id string) string {
	s.t.Helper()
	code, doc := s.do("POST", "/v1/elections/"+election+"/candidates", "", `{"id":"`+id+`","ttl":"1m"}`)
	if code != http.StatusCreated {
		s.t.Fatalf("campaign %s: status %d: %v", id, code, doc)
	}
	return doc["token"].(string)
}

// scrape returns GET /metrics.
func (s *server) scrape() string {
	s.t.Helper()
	res, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		s.t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return string(b)
}

// waitFor scrapes until every line is in the exposition, or fails after 10s.
func (s *server) waitFor(lines ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := s.scrape()
		missing := ""
		for _, l := range lines {
			if !hasLine(text, l) {
				missing = l
				break
			}
		}
		if missing == "" {
			return text
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no line %q in the scrape:\n%s", missing, elector(text))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasLine reports whether text has line exactly.
func hasLine(text, line string) bool {
	return strings.Contains("\n"+text, "\n"+line+"\n")
}

// elector keeps only the elector_ lines of a scrape, for failure messages.
func elector(text string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, "elector_") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// subscribe opens an event stream and waits for its first bytes; it is
// closed at the end of the test (before the server, which waits for it).
func (s *server) subscribe(path string) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cancel(); res.Body.Close() })
	if _, err := bufio.NewReader(res.Body).ReadString('\n'); err != nil {
		s.t.Fatal(err)
	}
}

// TestScrapeAfterAScriptedElection runs an election over the API and finds
// the expected series and values at /metrics: a leads, b waits; a resigns
// and b leads; b reports an error and nobody leads; c campaigns and leads.
func TestScrapeAfterAScriptedElection(t *testing.T) {
	s := newServer(t)
	s.subscribe("/v1/elections/billing/events")

	a := s.campaign("billing", "a")
	b := s.campaign("billing", "b")
	if code, _ := s.do("DELETE", "/v1/elections/billing/candidates/a", a, ""); code != http.StatusNoContent {
		t.Fatalf("resign: %d", code)
	}
	if code, doc := s.do("POST", "/v1/elections/billing/candidates/b/error", b, `{"reason":"begin handler failed"}`); code != http.StatusOK {
		t.Fatalf("error report: %d %v", code, doc)
	}
	s.campaign("billing", "c")
	if code, _ := s.do("GET", "/v1/nothing/here", "", ""); code != http.StatusNotFound {
		t.Fatalf("unknown path: %d", code)
	}
	if code, _ := s.do("PUT", "/v1/elections/billing/candidates/nobody/heartbeat", "x", ""); code != http.StatusNotFound {
		t.Fatalf("heartbeat of nobody: %d", code)
	}

	text := s.waitFor(
		// Transitions, from the event stream.
		`elector_leader_transitions_total{election="billing",reason="none",type="leader.begin"} 1`,
		`elector_leader_transitions_total{election="billing",reason="resigned",type="leader.end"} 1`,
		`elector_leader_transitions_total{election="billing",reason="resigned",type="leader.begin"} 1`,
		`elector_leader_transitions_total{election="billing",reason="none",type="leader.error"} 1`,
		`elector_leader_transitions_total{election="billing",reason="error",type="leader.end"} 1`,
		`elector_leader_transitions_total{election="billing",reason="error",type="leader.begin"} 1`,
	)
	for _, line := range []string{
		// Candidates and leaders, at scrape time.
		`elector_elections 1`,
		`elector_candidates{election="billing",state="leader"} 1`,
		`elector_candidates{election="billing",state="follower"} 0`,
		`elector_candidates{election="billing",state="error"} 1`,
		`elector_leaders{election="billing"} 1`,
		// HTTP, by route pattern.
		`elector_http_requests_total{code="201",method="POST",route="/v1/elections/{election}/candidates"} 3`,
		`elector_http_requests_total{code="204",method="DELETE",route="/v1/elections/{election}/candidates/{id}"} 1`,
		`elector_http_requests_total{code="200",method="POST",route="/v1/elections/{election}/candidates/{id}/error"} 1`,
		`elector_http_requests_total{code="404",method="PUT",route="/v1/elections/{election}/candidates/{id}/heartbeat"} 1`,
		`elector_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`elector_http_request_duration_seconds_count{method="POST",route="/v1/elections/{election}/candidates"} 3`,
		// SSE.
		`elector_sse_subscribers 1`,
		// Backend operations and errors.
		`elector_backend_operation_duration_seconds_count{op="campaign"} 3`,
		`elector_backend_operation_duration_seconds_count{op="resign"} 1`,
		`elector_backend_operation_duration_seconds_count{op="report_error"} 1`,
		`elector_backend_operation_duration_seconds_count{op="heartbeat"} 1`,
		`elector_backend_errors_total{kind="not_found",op="heartbeat"} 1`,
		// Webhooks: none configured, but the series are there.
		`elector_webhook_attempts_total{outcome="success"} 0`,
		`elector_webhook_deliveries_total{outcome="succeeded"} 0`,
	} {
		if !hasLine(text, line) {
			t.Errorf("no line %s", line)
		}
	}
	for _, prefix := range []string{"go_goroutines ", "process_", "go_memstats_"} {
		if !strings.Contains(text, "\n"+prefix) {
			t.Errorf("no %s series (Go runtime and process collectors)", prefix)
		}
	}
	if t.Failed() {
		t.Log(elector(text))
	}
}
