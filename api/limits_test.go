package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// newLimitedEnv is newEnv over a gateway with caps.
func newLimitedEnv(t *testing.T, gcfg gateway.Config, cfg Config) *env {
	t.Helper()
	b := memory.New()
	logs := &syncBuffer{}
	gcfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	gw := gateway.New(b, gcfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	cfg.Logger = gcfg.Logger
	srv := httptest.NewServer(New(gw, cfg))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); cancel(); <-done })
	return &env{t: t, srv: srv, gw: gw, log: logs}
}

// expectLimit checks a limit problem naming limit.
func expectLimit(t *testing.T, r response, status int, slug, limit string) {
	t.Helper()
	m := r.expect(t, status).json(t)
	if m["type"] != ProblemTypePrefix+slug || m["limit"] != limit {
		t.Fatalf("want %s naming %s, got %s", slug, limit, r.Body)
	}
	if !strings.Contains(m["detail"].(string), limit) {
		t.Fatalf("detail does not name the limit: %s", r.Body)
	}
}

func TestCandidatesPerElectionCapAnswersLimitReached(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{MaxCandidates: 2}, Config{})
	e.campaign("billing", "a", "30s")
	e.campaign("billing", "b", "30s")
	r := e.do("POST", "/v1/elections/billing/candidates", map[string]any{"id": "c", "ttl": "30s"})
	expectLimit(t, r, http.StatusTooManyRequests, "limit-reached", gateway.LimitCandidatesPerElection)
	e.campaign("other", "c", "30s") // another election has room
}

func TestElectionsCapAnswersLimitReached(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{MaxElections: 1}, Config{})
	e.campaign("billing", "a", "30s")
	e.campaign("billing", "b", "30s") // an existing election is not a new one
	r := e.do("POST", "/v1/elections/payroll/candidates", map[string]any{"id": "a", "ttl": "30s"})
	expectLimit(t, r, http.StatusTooManyRequests, "limit-reached", gateway.LimitElections)
	r = e.do("PATCH", "/v1/elections/payroll", map[string]any{"handover_delay": "1s"})
	expectLimit(t, r, http.StatusTooManyRequests, "limit-reached", gateway.LimitElections)
	e.do("PATCH", "/v1/elections/billing", map[string]any{"handover_delay": "1s"}).expect(t, http.StatusOK)
}

func TestStreamCapAnswersLimitReached(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, Config{MaxStreams: 1})
	s := e.stream("/v1/events")
	expectLimit(t, e.do("GET", "/v1/elections/billing/events", nil), http.StatusTooManyRequests, "limit-reached", "sse_subscribers")
	s.close()
	eventually(t, "the stream's slot to be freed", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/events", nil)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

func TestWriteRateLimitAnswersRateLimitedWithRetryAfter(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, Config{WriteRate: 0.5, WriteBurst: 2})
	e.campaign("billing", "a", "30s")
	e.campaign("billing", "b", "30s")
	r := e.do("POST", "/v1/elections/billing/candidates", map[string]any{"id": "c", "ttl": "30s"})
	expectLimit(t, r, http.StatusTooManyRequests, "rate-limited", "writes_per_second")
	if ra := r.Header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q, want 2", ra)
	}
	// Reads are not limited.
	for range 5 {
		e.do("GET", "/v1/elections/billing", nil).expect(t, http.StatusOK)
	}
}

func TestClientAddrTrustsForwardedForOnlyFromTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name, remote, xff, want string
	}{
		{"direct client", "203.0.113.7:5000", "", "203.0.113.7"},
		{"untrusted sender cannot spoof", "203.0.113.7:5000", "198.51.100.1", "203.0.113.7"},
		{"trusted proxy", "10.0.0.2:5000", "198.51.100.1", "198.51.100.1"},
		{"chain of proxies", "10.0.0.2:5000", "1.2.3.4, 198.51.100.1, 10.0.0.9", "198.51.100.1"},
		{"garbage after proxy", "10.0.0.2:5000", "nonsense", "10.0.0.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", io.NopCloser(strings.NewReader("")))
			r.RemoteAddr = tt.remote
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if got := clientAddr(r, trusted).String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestShutdownEndsStreamsWithARetryHint: when Config.Shutdown closes, a
// stream gets a retry field and a comment, then ends.
func TestShutdownEndsStreamsWithARetryHint(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	e := newLimitedEnv(t, gateway.Config{}, Config{Shutdown: stop, RetryHint: 1500 * time.Millisecond})
	s := e.stream("/v1/elections/billing/events")
	eventually(t, "the stream to connect", func() bool { return len(s.commentList()) > 0 })
	close(stop)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
	s.mu.Lock()
	retry, comments := s.retry, strings.Join(s.comments, "|")
	s.mu.Unlock()
	if retry != "1500" || !strings.Contains(comments, "shutting down") {
		t.Fatalf("retry %q, comments %q", retry, comments)
	}
}
