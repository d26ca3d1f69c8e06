package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/electorhq/elector/gateway"
)

// EventReset is the SSE event type of a snapshot: the client replaces what
// it knows of the election with the event's data, and applies the events
// that follow as deltas.
const EventReset = "reset"

// snapshotAttempts bounds how often a subscription retakes a snapshot that
// went stale between reading it and starting to watch from it.
const snapshotAttempts = 3

// reset is a snapshot event to send before the watched events. id is empty
// for all but the last reset of a stream, so that a client disconnected
// half-way through the resets resumes with its old, expired cursor and gets
// them all again.
type reset struct {
	id string
	e  gateway.Election
}

// subscription is a watch that a stream serves, and the resets it starts
// with. stop ends the watch.
type subscription struct {
	events <-chan gateway.Event
	resets []reset
	stop   context.CancelFunc
}

// streamElection: GET /v1/elections/{election}/events.
func (a *api) streamElection(w http.ResponseWriter, r *http.Request) {
	election := chi.URLParam(r, "election")
	if err := gateway.ValidateElectionName(election); err != nil {
		a.writeError(w, r, err)
		return
	}
	last, err := lastEventID(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	sub, err := a.subscribeElection(r.Context(), election, last)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer sub.stop()
	a.serveStream(w, r, sub)
}

// streamAll: GET /v1/events, the events of every election.
func (a *api) streamAll(w http.ResponseWriter, r *http.Request) {
	last, err := lastEventID(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	sub, err := a.subscribeAll(r.Context(), last)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer sub.stop()
	a.serveStream(w, r, sub)
}

// lastEventID is where a client resumes: the Last-Event-ID header its
// EventSource sends on reconnection or, for clients that cannot set
// headers, the last_event_id query parameter.
// Errors: invalid-request, for a malformed query string.
func lastEventID(r *http.Request) (string, error) {
	q, err := query(r)
	if err != nil {
		return "", err
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id, nil
	}
	return q.Get("last_event_id"), nil
}

// watch starts a watch under its own cancellable context.
func (a *api) watch(ctx context.Context, election, after string) (subscription, error) {
	ctx, cancel := context.WithCancel(ctx)
	ch, err := a.gw.Watch(ctx, election, after)
	if err != nil {
		cancel()
		return subscription{}, err
	}
	return subscription{events: ch, stop: cancel}, nil
}

// subscribeElection resumes after last when the backend still holds it.
// Otherwise (a fresh connection or an expired cursor) it starts with a
// reset snapshot of the election and watches from the snapshot's cursor, so
// that no event falls between the snapshot and the stream. An election that
// does not exist yet gets an empty snapshot without an id (there is no
// cursor to resume from) and is watched for its first events.
func (a *api) subscribeElection(ctx context.Context, election, last string) (subscription, error) {
	if last != "" {
		sub, err := a.watch(ctx, election, last)
		if !errors.Is(err, gateway.ErrCursorExpired) {
			return sub, err
		}
	}
	for attempt := 1; ; attempt++ {
		e, err := a.gw.Election(ctx, election)
		switch {
		case err == nil:
			sub, err := a.watch(ctx, election, e.Cursor)
			if errors.Is(err, gateway.ErrCursorExpired) && attempt < snapshotAttempts {
				continue // the snapshot's cursor was trimmed already: take another
			}
			sub.resets = []reset{{id: e.Cursor, e: e}}
			return sub, err
		case errors.Is(err, gateway.ErrElectionNotFound):
			sub, err := a.watch(ctx, election, "")
			if err != nil {
				return sub, err
			}
			// Had the first campaign landed between the snapshot and the
			// watch, its events would be lost: look again, and start over
			// with a snapshot if the election exists now.
			if _, err := a.gw.Election(ctx, election); err == nil && attempt < snapshotAttempts {
				sub.stop()
				continue
			}
			settings := gateway.DefaultSettings()
			if d := a.gw.Config().Defaults; d != nil {
				settings = *d
			}
			sub.resets = []reset{{e: gateway.Election{Name: election, Settings: settings}}}
			return sub, nil
		default:
			return subscription{}, err
		}
	}
}

// subscribeAll watches every election. A fresh connection gets only new
// events; a resumed one with an expired cursor gets one reset per election,
// then the events from the snapshot's cursor.
func (a *api) subscribeAll(ctx context.Context, last string) (subscription, error) {
	sub, err := a.watch(ctx, "", last)
	if last == "" || !errors.Is(err, gateway.ErrCursorExpired) {
		return sub, err
	}
	for attempt := 1; ; attempt++ {
		es, cursor, err := a.gw.Elections(ctx)
		if err != nil {
			return subscription{}, err
		}
		sub, err := a.watch(ctx, "", cursor)
		if errors.Is(err, gateway.ErrCursorExpired) && attempt < snapshotAttempts {
			continue
		}
		if err != nil {
			return sub, err
		}
		for i, e := range es {
			rs := reset{e: e}
			if i == len(es)-1 {
				rs.id = cursor
			}
			sub.resets = append(sub.resets, rs)
		}
		return sub, nil
	}
}

// serveStream writes sub as text/event-stream until the client goes away
// or the watch ends (slow consumer, backend stopping); the client then
// reconnects with Last-Event-ID.
func (a *api) serveStream(w http.ResponseWriter, r *http.Request, sub subscription) {
	defer a.streamStarted()()
	rc := http.NewResponseController(w)
	// A server WriteTimeout must not cut a stream that lives for hours.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var b strings.Builder
	fmt.Fprintf(&b, "retry: %d\n: connected\n\n", a.cfg.RetryHint.Milliseconds())
	for _, rs := range sub.resets {
		writeEvent(&b, rs.id, EventReset, resetPayload{Type: EventReset, Timestamp: time.Now().UTC(), Data: snapshotOf(rs.e)})
	}
	if !send(w, rc, &b) {
		return
	}

	keepAlive := time.NewTicker(a.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			a.sendRetryHint(w, rc, &b)
			return
		case <-a.cfg.Shutdown:
			a.sendRetryHint(w, rc, &b)
			return
		case ev, ok := <-sub.events:
			if !ok {
				if r.Context().Err() != nil || a.shuttingDown() {
					// Ended by the request's end (the client left, or the
					// shutdown ended it), which closes the watch, or as the
					// replica shuts down: not a watch that ended on its own.
					a.sendRetryHint(w, rc, &b)
					return
				}
				// The watch ended: this stream fell further behind than the
				// replica keeps, or the backend watch broke. The client
				// resumes where it was.
				fmt.Fprintf(&b, "retry: %d\n: watch ended; reconnect with Last-Event-ID\n\n", a.cfg.RetryHint.Milliseconds())
				_ = send(w, rc, &b)
				return
			}
			writeEvent(&b, ev.ID, string(ev.Type), ev.Payload())
		case <-keepAlive.C:
			b.WriteString(": keep-alive\n\n")
		}
		// A client that stops reading must not hold the stream forever:
		// each write gets a deadline, and a stream that misses it ends.
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if !send(w, rc, &b) {
			return
		}
	}
}

// streamWriteTimeout bounds one write of an event stream: a client that
// reads nothing for this long is cut off (it reconnects with Last-Event-ID),
// so that it holds no goroutine and no buffer for ever.
const streamWriteTimeout = 30 * time.Second

// resetPayload is the data of a reset event, in the shape of every other
// event's payload.
type resetPayload struct {
	Type      string      `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      snapshotDoc `json:"data"`
}

// writeEvent appends one SSE event to b. JSON has no raw newlines, so data
// fits one line; an id is written only when there is one.
func writeEvent(b *strings.Builder, id, typ string, data any) {
	j, err := json.Marshal(data)
	if err != nil { // cannot happen for the payload types
		return
	}
	if id != "" && !strings.ContainsAny(id, "\r\n") {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + typ + "\ndata: ")
	b.Write(j)
	b.WriteString("\n\n")
}

// send writes out and flushes b, and reports whether the client is still
// there.
func send(w http.ResponseWriter, rc *http.ResponseController, b *strings.Builder) bool {
	_, err := w.Write([]byte(b.String()))
	b.Reset()
	if err != nil {
		return false
	}
	return rc.Flush() == nil
}

// shuttingDown reports whether the replica is shutting down.
func (a *api) shuttingDown() bool {
	select {
	case <-a.cfg.Shutdown:
		return true
	default:
		return false
	}
}

// sendRetryHint ends a stream when the replica shuts down: a retry field
// and a comment, so that the client reconnects (to another replica) after
// the hint. A stream whose client went away gets nothing.
func (a *api) sendRetryHint(w http.ResponseWriter, rc *http.ResponseController, b *strings.Builder) {
	if !a.shuttingDown() {
		return
	}
	fmt.Fprintf(b, "retry: %d\n: shutting down; reconnect with Last-Event-ID\n\n", a.cfg.RetryHint.Milliseconds())
	_ = send(w, rc, b)
}
