package conformance

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// faultProxy is an HTTP proxy the suite puts between a driver and a
// gateway. It records the candidacy's requests (campaign, heartbeat,
// resign, error report, handover: every request under …/candidates but a
// GET) and its session's (open, heartbeat, close), and can answer them
// itself with a fault, refuse heartbeats, and cut the event streams it
// carries.
type faultProxy struct {
	URL string

	mu       sync.Mutex
	requests []proxied
	faults   []fault
	refusing bool                  // heartbeats are answered 503
	streams  map[net.Conn]struct{} // connections carrying an event stream
	changed  chan struct{}         // closed and replaced when requests or streams change
}

// proxied is one request of the candidacy through the proxy.
type proxied struct {
	// Kind is campaign, heartbeat, resign, error or handover; or
	// open_session, session_heartbeat or close_session.
	Kind     string
	Arrived  time.Time // when the proxy got it
	Answered time.Time // when the proxy began its answer (zero until then)
	Status   int
	// RetryAfter is the instant the proxy's Retry-After pointed at, for
	// an answered fault.
	RetryAfter time.Time
}

// fault is an answer the proxy gives in place of the gateway's.
type fault struct {
	status int
	// retryAfter is the Retry-After to send: whole seconds, or an
	// HTTP-date that many seconds (rounded up) ahead when date is set.
	retryAfter int
	date       bool
}

type connKey struct{}

// newFaultProxy starts a proxy in front of target; it closes when the
// test ends.
func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // event streams pass at once
	rp.ErrorLog = log.New(io.Discard, "", 0)
	p := &faultProxy{streams: map[net.Conn]struct{}{}, changed: make(chan struct{})}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, rp)
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// kind names a request of the candidacy or of its session, or "" for
// another request.
func kind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// v1 sessions [{session} [heartbeat]]
	if len(parts) >= 2 && parts[0] == "v1" && parts[1] == "sessions" {
		switch {
		case len(parts) == 2 && r.Method == http.MethodPost:
			return "open_session"
		case len(parts) == 3 && r.Method == http.MethodDelete:
			return "close_session"
		case len(parts) == 4 && parts[3] == "heartbeat" && r.Method == http.MethodPut:
			return "session_heartbeat"
		}
		return ""
	}
	// v1 elections {election} candidates [{id} [heartbeat|error|handover]]
	if r.Method == http.MethodGet || len(parts) < 4 || parts[0] != "v1" || parts[1] != "elections" || parts[3] != "candidates" {
		return ""
	}
	switch {
	case len(parts) == 4 && r.Method == http.MethodPost:
		return "campaign"
	case len(parts) == 5 && r.Method == http.MethodDelete:
		return "resign"
	case len(parts) == 6:
		return parts[5]
	}
	return ""
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) {
	k := kind(r)
	if k == "" {
		if strings.HasSuffix(r.URL.Path, "/events") {
			c, _ := r.Context().Value(connKey{}).(net.Conn)
			p.mu.Lock()
			p.streams[c] = struct{}{}
			p.notify()
			p.mu.Unlock()
			defer func() {
				p.mu.Lock()
				delete(p.streams, c)
				p.mu.Unlock()
			}()
		}
		rp.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	i := len(p.requests)
	p.requests = append(p.requests, proxied{Kind: k, Arrived: time.Now()})
	var f *fault
	switch {
	case len(p.faults) > 0:
		f = &p.faults[0]
		p.faults = p.faults[1:]
	case p.refusing && (k == "heartbeat" || k == "session_heartbeat"):
		f = &fault{status: http.StatusServiceUnavailable}
	}
	p.notify()
	p.mu.Unlock()

	record := func(status int, answered, retryAfter time.Time) {
		p.mu.Lock()
		p.requests[i].Status, p.requests[i].Answered, p.requests[i].RetryAfter = status, answered, retryAfter
		p.notify()
		p.mu.Unlock()
	}
	if f != nil {
		// The answer is buffered until this handler returns: recorded
		// first, the client cannot have it before the suite does.
		answered := time.Now()
		record(f.status, answered, f.answer(w))
		return
	}
	// The gateway's answer is recorded as it begins, before the proxy
	// passes any of it on (it flushes at once): a driver's report of what
	// the answer said never comes before the record of it.
	rp.ServeHTTP(&statusRecorder{ResponseWriter: w, began: func(status int, at time.Time) {
		record(status, at, time.Time{})
	}}, r)
}

// answer writes the fault as the gateway writes problems and returns the
// instant its Retry-After points at (zero without one). That instant is
// taken before the answer is written, so the client cannot have it
// earlier.
func (f *fault) answer(w http.ResponseWriter) time.Time {
	var at time.Time
	if f.retryAfter > 0 {
		now := time.Now()
		if f.date {
			// An HTTP-date has whole seconds: the first one at least
			// retryAfter seconds ahead.
			at = now.Add(time.Duration(f.retryAfter) * time.Second).Truncate(time.Second).Add(time.Second)
			w.Header().Set("Retry-After", at.UTC().Format(http.TimeFormat))
		} else {
			at = now.Add(time.Duration(f.retryAfter) * time.Second)
			w.Header().Set("Retry-After", fmt.Sprint(f.retryAfter))
		}
	}
	slug := map[int]string{http.StatusTooManyRequests: "rate-limited", http.StatusServiceUnavailable: "backend-unavailable"}[f.status]
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(f.status)
	fmt.Fprintf(w, `{"type":"urn:elector:problem:%s","title":%q,"status":%d,"detail":"a fault of the conformance suite's proxy"}`,
		slug, http.StatusText(f.status), f.status)
	return at
}

// statusRecorder tells began the status of an answer, and when it began,
// before the answer is passed on.
type statusRecorder struct {
	http.ResponseWriter
	began  func(status int, at time.Time)
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
		s.began(code, time.Now())
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
		s.began(http.StatusOK, time.Now())
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// notify wakes the waiters; p.mu is held.
func (p *faultProxy) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Fail answers the next n requests of the candidacy with f.
func (p *faultProxy) Fail(n int, f fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range n {
		p.faults = append(p.faults, f)
	}
}

// Refuse makes the proxy answer heartbeats, of candidacies and of
// sessions, with 503 (on) or pass them again (off).
func (p *faultProxy) Refuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = on
}

// CutStreams waits until the proxy carries an event stream, then closes
// every connection that carries one, as a network that drops them does.
func (p *faultProxy) CutStreams(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if len(p.streams) > 0 {
			for c := range p.streams {
				_ = c.Close()
				delete(p.streams, c)
			}
			p.mu.Unlock()
			return
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no event stream through the proxy within %s", waitLimit)
		}
	}
}

// Requests returns the candidacy's requests so far.
func (p *faultProxy) Requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxied(nil), p.requests...)
}

// await waits until cond holds of the requests, failing the test after
// waitLimit, and returns them.
func (p *faultProxy) await(t *testing.T, what string, cond func([]proxied) bool) []proxied {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		reqs := append([]proxied(nil), p.requests...)
		changed := p.changed
		p.mu.Unlock()
		if cond(reqs) {
			return reqs
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("the proxy saw no %s within %s; it saw:\n%s", what, waitLimit, describe(reqs))
		}
	}
}

// describe lists requests, one a line.
func describe(reqs []proxied) string {
	var b strings.Builder
	for _, r := range reqs {
		fmt.Fprintf(&b, "\t%s arrived %s, answered %d at %s\n", r.Kind, r.Arrived.Format("15:04:05.000"), r.Status, r.Answered.Format("15:04:05.000"))
	}
	return b.String()
}
