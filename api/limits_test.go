package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
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
	eventually.True(t, 5*time.Second, "the stream's slot to be freed", func() bool {
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
	tokA := e.campaign("billing", "a", "30s")
	e.campaign("billing", "b", "30s")
	r := e.do("POST", "/v1/elections/billing/candidates", map[string]any{"id": "c", "ttl": "30s"})
	expectLimit(t, r, http.StatusTooManyRequests, "rate-limited", "writes_per_second")
	if ra := r.Header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q, want 2", ra)
	}
	// Reads are not limited, nor heartbeats: those are limited per
	// candidate, never per address.
	for range 5 {
		e.do("GET", "/v1/elections/billing", nil).expect(t, http.StatusOK)
		e.do("PUT", "/v1/elections/billing/candidates/a/heartbeat", nil, token(tokA)).expect(t, http.StatusOK)
	}
}

// serveDefaults is the API configuration elector serve gives by default
// (cmd/elector checks that it does).
func serveDefaults() Config {
	return Config{HeartbeatRate: DefaultHeartbeatRate, HeartbeatBurst: DefaultHeartbeatBurst, MaxReads: DefaultMaxReads}
}

// TestFleetBehindOneAddressIsNeverRefusedByDefault: 1,000 candidates
// behind one proxy address campaign and heartbeat three times as fast as
// they can (a TTL/3 heartbeat is far slower): with the default limits not
// one request is refused.
func TestFleetBehindOneAddressIsNeverRefusedByDefault(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, serveDefaults())
	const fleet = 1000
	tokens := make([]string, fleet)
	for i := range fleet {
		// A long TTL: the test is about refusals, not about a slow
		// machine letting candidates expire while the fleet campaigns.
		tokens[i] = e.campaign("fleet", fmt.Sprintf("node-%d", i), "1h")
	}
	var refused atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < fleet; i += 8 {
				for range 3 {
					res := e.rawDo("PUT", fmt.Sprintf("/v1/elections/fleet/candidates/node-%d/heartbeat", i), tokens[i])
					if res != http.StatusOK {
						refused.Add(1)
						mu.Lock()
						statuses[res]++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	if n := refused.Load(); n != 0 {
		t.Fatalf("%d of %d heartbeats refused (status: count %v)", n, 3*fleet, statuses)
	}
}

// rawDo sends one request with a candidate token and returns its status;
// safe to call from several goroutines (it does not validate against the
// spec, which do does, as that needs the test's goroutine).
func (e *env) rawDo(method, path, tok string) int {
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		return 0
	}
	req.Header.Set(TokenHeader, tok)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

func TestHeartbeatLimitIsPerCandidateAndToken(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, Config{HeartbeatRate: 0.5, HeartbeatBurst: 2})
	tokA := e.campaign("billing", "a", "30s")
	tokB := e.campaign("billing", "b", "30s")
	hb := func(id string) string { return "/v1/elections/billing/candidates/" + id + "/heartbeat" }

	// Somebody without a's token cannot spend a's bucket.
	for range 5 {
		if r := e.do("PUT", hb("a"), nil, token("ect_guess")); r.Status != http.StatusForbidden && r.Status != http.StatusTooManyRequests {
			t.Fatalf("a guessed token: status %d", r.Status)
		}
	}
	e.do("PUT", hb("a"), nil, token(tokA)).expect(t, http.StatusOK)
	e.do("PUT", hb("a"), nil, token(tokA)).expect(t, http.StatusOK)
	r := e.do("PUT", hb("a"), nil, token(tokA))
	expectLimit(t, r, http.StatusTooManyRequests, "rate-limited", "heartbeats_per_second")
	if r.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	// Another candidate from the same address has its own bucket.
	e.do("PUT", hb("b"), nil, token(tokB)).expect(t, http.StatusOK)
	// The refused heartbeat changed nothing: a still leads.
	if id, _ := e.leader("billing"); id != "a" {
		t.Fatalf("leader %s", id)
	}
}

// TestSessionHeartbeatLimitIsPerSessionAndToken: a session's heartbeats
// are heartbeats, limited per session like a candidate's, never as writes
// of the client's address.
func TestSessionHeartbeatLimitIsPerSessionAndToken(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, Config{WriteRate: 0.5, WriteBurst: 2, HeartbeatRate: 0.5, HeartbeatBurst: 2})
	open := func() (string, string) {
		s := e.do("POST", "/v1/sessions", `{"ttl":"30s"}`).expect(t, http.StatusCreated).json(t)
		return s["id"].(string), s["token"].(string)
	}
	idA, tokA := open()
	idB, tokB := open() // the address's writes are spent
	expectLimit(t, e.do("POST", "/v1/sessions", `{"ttl":"30s"}`), http.StatusTooManyRequests, "rate-limited", "writes_per_second")
	hb := func(id string) string { return "/v1/sessions/" + id + "/heartbeat" }

	// Somebody without A's token cannot spend A's bucket.
	for range 5 {
		if r := e.do("PUT", hb(idA), nil, sessionToken("ecs_"+idA+".guess")); r.Status != http.StatusForbidden && r.Status != http.StatusTooManyRequests {
			t.Fatalf("a guessed token: status %d", r.Status)
		}
	}
	e.do("PUT", hb(idA), nil, sessionToken(tokA)).expect(t, http.StatusOK)
	e.do("PUT", hb(idA), nil, sessionToken(tokA)).expect(t, http.StatusOK)
	r := e.do("PUT", hb(idA), nil, sessionToken(tokA))
	expectLimit(t, r, http.StatusTooManyRequests, "rate-limited", "heartbeats_per_second")
	if d := r.json(t)["detail"].(string); !strings.Contains(d, "session \""+idA+"\"") || r.Header.Get("Retry-After") == "" {
		t.Errorf("the refusal does not name session %s, or has no Retry-After: %s", idA, r.Body)
	}
	// Another session from the same address has its own bucket.
	e.do("PUT", hb(idB), nil, sessionToken(tokB)).expect(t, http.StatusOK)
}

func TestReadRateLimitIsPerClientAndSparesStreams(t *testing.T) {
	t.Parallel()
	e := newLimitedEnv(t, gateway.Config{}, Config{ReadRate: 0.5, ReadBurst: 2})
	e.campaign("billing", "a", "30s")
	e.do("GET", "/v1/elections/billing", nil).expect(t, http.StatusOK)
	e.do("GET", "/v1/elections/billing/leader", nil).expect(t, http.StatusOK)
	expectLimit(t, e.do("GET", "/v1/elections", nil), http.StatusTooManyRequests, "rate-limited", "reads_per_second")
	// Probes, operations and event streams are not reads of elections.
	e.do("GET", "/healthz", nil).expect(t, http.StatusOK)
	s := e.stream("/v1/elections/billing/events")
	eventually.True(t, 5*time.Second, "the stream to connect", func() bool { return len(s.commentList()) > 0 })
	s.close()
	// Writes are not reads.
	e.campaign("billing", "b", "30s")
}

func TestConcurrentReadsCapAnswersLimitReached(t *testing.T) {
	t.Parallel()
	a := &api{cfg: Config{MaxReads: 1}.withDefaults()}
	a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	entered, release := make(chan struct{}), make(chan struct{})
	slow := a.capReads(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	srv := httptest.NewServer(slow)
	t.Cleanup(srv.Close)
	first := make(chan int, 1)
	go func() {
		res, err := srv.Client().Get(srv.URL + "/v1/elections")
		if err != nil {
			first <- 0
			return
		}
		_ = res.Body.Close()
		first <- res.StatusCode
	}()
	<-entered
	res, err := srv.Client().Get(srv.URL + "/v1/elections")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), `"limit":"concurrent_reads"`) || res.Header.Get("Retry-After") == "" {
		t.Fatalf("second read while one runs: %d %s", res.StatusCode, body)
	}
	close(release)
	if s := <-first; s != http.StatusOK {
		t.Fatalf("first read: %d", s)
	}
	// The slot is free again.
	go func() { <-entered }()
	res, err = srv.Client().Get(srv.URL + "/v1/elections")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("read after the first ended: %v %v", err, res)
	}
	_ = res.Body.Close()
}

func TestLimiterLetsNewKeysThroughPastItsCapacity(t *testing.T) {
	l := newBucketLimiter[int](1, 1)
	now := time.Now()
	for i := range maxBuckets {
		if ok, _ := l.allow(i, now); !ok {
			t.Fatalf("key %d refused on its first request", i)
		}
	}
	// A new key past the cap is let through, not refused; known keys keep
	// their limit.
	if ok, _ := l.allow(maxBuckets, now); !ok {
		t.Fatal("a new key past the capacity was refused")
	}
	if ok, _ := l.allow(0, now); ok {
		t.Fatal("a known key's bucket was forgotten while busy")
	}
	// Once the old keys are idle they are swept and new keys limited again.
	later := now.Add(limiterIdle + time.Second)
	l.allow(maxBuckets+1, later)
	l.allow(maxBuckets+1, later)
	if ok, _ := l.allow(maxBuckets+1, later); ok {
		t.Fatal("a new key after the sweep is not limited")
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
	eventually.True(t, 5*time.Second, "the stream to connect", func() bool { return len(s.commentList()) > 0 })
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
