package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseEvent is one event read from a stream.
type sseEvent struct {
	ID, Event, Data string
}

// json decodes the event's data.
func (ev sseEvent) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil {
		t.Fatalf("event data is not JSON: %v\n%s", err, ev.Data)
	}
	return m
}

// stream is an SSE client reading one response in the background.
type stream struct {
	t      testing.TB
	res    *http.Response
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	events chan sseEvent

	mu       sync.Mutex
	retry    string
	comments []string
}

// stream opens an SSE stream, validates its status and headers against
// openapi.yaml and each event's data against the Event or Reset schema,
// and reads it until close.
func (e *env) stream(path string, headers ...header) *stream {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	for _, h := range headers {
		req.Header.Set(h.key, h.value)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("GET %s: %v", path, err)
	}
	validate(e.t, req, response{Status: res.StatusCode, Header: res.Header}, true)
	if res.StatusCode != http.StatusOK {
		cancel()
		res.Body.Close()
		e.t.Fatalf("GET %s: status %d", path, res.StatusCode)
	}
	s := &stream{t: e.t, res: res, ctx: ctx, cancel: cancel, done: make(chan struct{}), events: make(chan sseEvent, 1000)}
	go s.read()
	e.t.Cleanup(s.close)
	return s
}

// read parses the stream until it ends. Events go to s.events, which is
// closed at the end.
func (s *stream) read() {
	defer close(s.done)
	defer close(s.events)
	doc, _ := spec()
	sc := bufio.NewScanner(s.res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev.Event == "" && ev.Data == "" {
				continue
			}
			schema := "Event"
			if ev.Event == EventReset {
				schema = "Reset"
			}
			var v any
			if err := json.Unmarshal([]byte(ev.Data), &v); err != nil {
				s.t.Errorf("event %s: data is not JSON: %v", ev.Event, err)
			} else if err := doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
				s.t.Errorf("event %s does not match the %s schema: %v\n%s", ev.Event, schema, err, ev.Data)
			}
			select {
			case s.events <- ev:
			case <-s.ctx.Done():
				return
			}
			ev = sseEvent{}
		case field == "":
			s.mu.Lock()
			s.comments = append(s.comments, value)
			s.mu.Unlock()
		case field == "retry":
			s.mu.Lock()
			s.retry = value
			s.mu.Unlock()
		case field == "id":
			ev.ID = value
		case field == "event":
			ev.Event = value
		case field == "data":
			ev.Data += value
		}
	}
}

// next returns the next event, failing the test after a timeout or if the
// stream ended.
func (s *stream) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(5 * time.Second):
		s.t.Fatal("timed out waiting for an event")
	}
	return sseEvent{}
}

// nextN returns the next n events.
func (s *stream) nextN(n int) []sseEvent {
	s.t.Helper()
	out := make([]sseEvent, n)
	for i := range out {
		out[i] = s.next()
	}
	return out
}

// quiet fails the test if an event arrives within d.
func (s *stream) quiet(d time.Duration) {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			s.t.Fatalf("unexpected event %+v", ev)
		}
	case <-time.After(d):
	}
}

// commentList returns the comment lines read so far.
func (s *stream) commentList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.comments...)
}

// close disconnects and waits for the reader to finish.
func (s *stream) close() {
	s.cancel()
	s.res.Body.Close()
	<-s.done
}
