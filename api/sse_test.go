package api

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"go.uber.org/goleak"
)

// collectUntil reads events from s until one of type typ about candidate
// id arrives, and returns all of them.
func collectUntil(t *testing.T, s *stream, typ, id string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for {
		ev := s.next()
		out = append(out, ev)
		if ev.Event == typ {
			if c, ok := ev.json(t)["data"].(map[string]any)["candidate"].(map[string]any); ok && c["id"] == id {
				return out
			}
		}
	}
}

func TestStreamResumesWithLastEventID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	all := e.stream("/v1/events")
	tokA := e.campaign("billing", "node-a", "1m")

	s := e.stream("/v1/elections/billing/events")
	reset := s.next()
	if reset.Event != EventReset || reset.ID == "" {
		t.Fatalf("a fresh stream starts with %+v, want a reset with an id", reset)
	}
	e.campaign("billing", "node-b", "1m")
	joined := s.next()
	if joined.Event != "candidate.joined" {
		t.Fatalf("after the reset: %+v, want candidate.joined", joined)
	}
	s.close()

	// Transitions the disconnected client misses.
	e.do("DELETE", "/v1/elections/billing/candidates/node-a", nil, token(tokA)).expect(t, http.StatusNoContent)
	e.campaign("billing", "node-c", "1m")

	seen := collectUntil(t, all, "candidate.joined", "node-c")
	i := slices.IndexFunc(seen, func(ev sseEvent) bool { return ev.ID == joined.ID })
	if i < 0 {
		t.Fatalf("the global stream lacks event %s", joined.ID)
	}
	missed := seen[i+1:]
	if len(missed) < 3 {
		t.Fatalf("only %d events after the disconnection: %+v", len(missed), missed)
	}
	var types []string
	for _, ev := range missed {
		types = append(types, ev.Event)
	}
	for _, want := range []string{"leader.end", "leader.begin", "candidate.joined"} {
		if !slices.Contains(types, want) {
			t.Errorf("missed events %v lack %s", types, want)
		}
	}

	for _, resume := range []struct {
		name string
		path string
		h    []header
	}{
		{"header", "/v1/elections/billing/events", []header{{"Last-Event-ID", joined.ID}}},
		{"query", "/v1/elections/billing/events?last_event_id=" + joined.ID, nil},
	} {
		t.Run(resume.name, func(t *testing.T) {
			s := e.stream(resume.path, resume.h...)
			got := s.nextN(len(missed))
			if !slices.Equal(got, missed) {
				t.Errorf("resumed stream:\n%+v\nwant\n%+v", got, missed)
			}
			s.quiet(50 * time.Millisecond)
		})
	}

	// The global stream resumes the same way.
	g := e.stream("/v1/events", header{"Last-Event-ID", seen[0].ID})
	if got := g.nextN(len(seen) - 1); !slices.Equal(got, seen[1:]) {
		t.Errorf("resumed global stream:\n%+v\nwant\n%+v", got, seen[1:])
	}
}

func TestStreamResetsWhenCursorIsNotHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	e.campaign("billing", "node-a", "1m")
	e.campaign("billing", "node-b", "1m")
	e.campaign("jobs", "node-a", "1m")

	s := e.stream("/v1/elections/billing/events", header{"Last-Event-ID", "999999999"})
	reset := s.next()
	if reset.Event != EventReset || reset.ID == "" {
		t.Fatalf("first event %+v, want a reset with an id", reset)
	}
	data := reset.json(t)["data"].(map[string]any)
	cs := data["candidates"].([]any)
	if data["election"] != "billing" || data["term"] != 1.0 || len(cs) != 2 ||
		cs[0].(map[string]any)["id"] != "node-a" || data["leader"].(map[string]any)["id"] != "node-a" {
		t.Errorf("snapshot %s", reset.Data)
	}
	e.campaign("billing", "node-c", "1m")
	next := s.next()
	cursor, _ := strconv.ParseUint(reset.ID, 10, 64)
	if id, _ := strconv.ParseUint(next.ID, 10, 64); next.Event != "candidate.joined" || id <= cursor {
		t.Errorf("after the reset (id %s): %+v", reset.ID, next)
	}

	// Across elections: one reset per election, the last carrying the id.
	g := e.stream("/v1/events", header{"Last-Event-ID", "999999999"})
	r1, r2 := g.next(), g.next()
	if r1.Event != EventReset || r1.ID != "" || r1.json(t)["data"].(map[string]any)["election"] != "billing" {
		t.Errorf("first global reset %+v", r1)
	}
	if r2.Event != EventReset || r2.ID == "" || r2.json(t)["data"].(map[string]any)["election"] != "jobs" {
		t.Errorf("second global reset %+v", r2)
	}
	e.campaign("jobs", "node-b", "1m")
	if ev := g.next(); ev.Event != "candidate.joined" {
		t.Errorf("after the global resets: %+v", ev)
	}
}

func TestStreamSendsRetryHintAndKeepAlives(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{KeepAlive: 20 * time.Millisecond, RetryHint: 1500 * time.Millisecond})
	s := e.stream("/v1/events")
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := s.res.Header.Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	eventually.True(t, 5*time.Second, "keep-alive comments", func() bool { return len(s.commentList()) >= 3 })
	s.mu.Lock()
	retry := s.retry
	s.mu.Unlock()
	if retry != "1500" {
		t.Errorf("retry %q, want 1500", retry)
	}
	if c := s.commentList(); c[0] != "connected" || c[1] != "keep-alive" {
		t.Errorf("comments %q", c)
	}
}

func TestStreamOutlivesServerWriteTimeout(t *testing.T) {
	t.Parallel()
	const writeTimeout = 100 * time.Millisecond
	e := newEnv(t, Config{KeepAlive: 20 * time.Millisecond}, func(s *httptest.Server) {
		s.Config.WriteTimeout = writeTimeout
	})
	// The server's write deadline is set after this instant, when it reads
	// the request: once the deadline has passed, a keep-alive the stream
	// has not yet received was written after it.
	deadline := time.Now().Add(writeTimeout)
	s := e.stream("/v1/elections/billing/events")
	if ev := s.next(); ev.Event != EventReset {
		t.Fatalf("the stream opens with %+v; want a reset", ev)
	}
	eventually.True(t, 5*time.Second, "the write deadline to pass", func() bool { return time.Now().After(deadline) })
	seen := len(s.commentList())
	eventually.True(t, 5*time.Second, "a keep-alive written after the write deadline", func() bool { return len(s.commentList()) > seen })
	e.campaign("billing", "node-a", "1m")
	if ev := s.next(); ev.Event != "candidate.joined" && ev.Event != "leader.begin" {
		t.Errorf("event after the write timeout: %+v", ev)
	}
}

// TestDisconnectedSubscriberLeavesNoGoroutine runs alone (not parallel):
// it compares the process's goroutines before and after a stream.
func TestDisconnectedSubscriberLeavesNoGoroutine(t *testing.T) {
	e := newEnv(t, Config{KeepAlive: 10 * time.Millisecond})
	e.campaign("billing", "node-a", "1m")
	e.following()
	e.srv.Client().CloseIdleConnections()
	before := goleak.IgnoreCurrent()

	for i, sub := range []struct{ path, election string }{
		{"/v1/elections/billing/events", "billing"},
		{"/v1/events", "billing"},
		{"/v1/elections/later/events", "later"},
	} {
		s := e.stream(sub.path)
		e.campaign(sub.election, "node-"+strconv.Itoa(i), "1m")
		s.next()
		s.close()
	}
	e.srv.Client().CloseIdleConnections()
	noGoroutineLeft(t, before)
}
