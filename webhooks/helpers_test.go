package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a memory backend with its loop, and a gateway over it.
type env struct {
	t  *testing.T
	b  *memory.Backend
	gw *gateway.Gateway
}

func newEnv(t *testing.T, opts ...memory.Option) *env {
	t.Helper()
	return newEnvWith(t, gateway.Config{}, opts...)
}

// newEnvWith is newEnv with a gateway configuration (its logger is set
// here).
func newEnvWith(t *testing.T, gcfg gateway.Config, opts ...memory.Option) *env {
	t.Helper()
	b := memory.New(opts...)
	gcfg.Logger = quiet()
	gw := gateway.New(b, gcfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = gw.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &env{t: t, b: b, gw: gw}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig delivers fast: short retries, claims and polls, loopback
// allowed, no jitter.
func testConfig() Config {
	return Config{
		AllowPrivateNetworks: true,
		RequestTimeout:       2 * time.Second,
		RetrySchedule:        []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond},
		ClaimTTL:             4 * time.Second, // twice RequestTimeout, the least Validate accepts
		PollInterval:         50 * time.Millisecond,
		BeginTimeout:         time.Second,
		Jitter:               func(d time.Duration) time.Duration { return d },
		Logger:               quiet(),
	}
}

// service returns a Service over e; it runs until stop is called or the
// test ends.
func (e *env) service(cfg Config) (*Service, func()) {
	e.t.Helper()
	kv := e.gw.KV()
	s := New(e.gw, kv, cfg)
	return s, e.run(s)
}

// run runs s until the returned stop is called or the test ends.
func (e *env) run(s *Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

// campaign campaigns id with a long TTL kept alive by heartbeats.
func (e *env) campaign(election, id string) string {
	e.t.Helper()
	_, tok, err := e.gw.Campaign(context.Background(), election, gateway.CampaignRequest{ID: id, TTL: 5 * time.Second})
	if err != nil {
		e.t.Fatalf("campaign %s: %v", id, err)
	}
	e.keepAlive(election, id, tok)
	return tok
}

func (e *env) keepAlive(election, id, tok string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = e.gw.Heartbeat(ctx, election, id, tok)
			}
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
}

// request is one request a receiver got.
type request struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Header                   http.Header
	Status                   int // what the receiver answered
}

func (r request) payload(t *testing.T) gateway.Payload {
	t.Helper()
	var p gateway.Payload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("payload %s: %v", r.Body, err)
	}
	return p
}

// receiver is a webhook endpoint on loopback that records every request
// and answers with what respond returns (200 if nil).
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []request
	respond func(n int, r *http.Request, w http.ResponseWriter) int
}

func newReceiver(t *testing.T, respond func(n int, r *http.Request, w http.ResponseWriter) int) *receiver {
	t.Helper()
	rc := &receiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		respond := rc.respond
		rc.mu.Unlock()
		status := http.StatusOK
		if respond != nil {
			status = respond(n, r, w)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, request{
			ID: r.Header.Get(HeaderID), Timestamp: r.Header.Get(HeaderTimestamp), Signature: r.Header.Get(HeaderSignature),
			Body: body, Header: r.Header.Clone(), Status: status,
		})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.got...)
}

func (rc *receiver) setRespond(f func(n int, r *http.Request, w http.ResponseWriter) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.respond = f
}

// successes are the requests answered 2xx, in order.
func (rc *receiver) successes() []request {
	var out []request
	for _, r := range rc.requests() {
		if r.Status >= 200 && r.Status < 300 {
			out = append(out, r)
		}
	}
	return out
}

// settled waits until the delivery log of endpoint holds n deliveries,
// none pending, and its cursor is persisted at the newest one's event: the
// worker is done with them, so none of them is sent again. It returns the
// log, newest first.
func (s *Service) settled(t *testing.T, endpoint string, n int) []Delivery {
	t.Helper()
	var ds []Delivery
	eventually.True(t, 10*time.Second, fmt.Sprintf("%d deliveries settled and the cursor past them", n), func() bool {
		var err error
		if ds, err = s.deliveries(context.Background(), endpoint, 0); err != nil || len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.Status == StatusPending {
				return false
			}
		}
		c, _, err := getJSON[cursorRecord](context.Background(), s.kv, cursorKey(endpoint))
		return err == nil && c.Last == ds[0].EventID
	})
	return ds
}

// subscribe creates a subscription of election to url.
func subscribe(t *testing.T, s *Service, election, url string, types ...gateway.EventType) (Endpoint, string) {
	t.Helper()
	ep, secret, err := s.CreateSubscription(context.Background(), election, SubscriptionRequest{URL: url, Types: types})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	return ep, secret
}
