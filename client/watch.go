package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Watch follows the events of election (of every election when election
// is ""), starting after lastEventID, or, when it is "", with a reset
// snapshot of the election followed by its new events.
//
// The first connection is made before Watch returns: its error (a
// *Problem such as ErrInvalidRequest, or a transport error) is returned
// and no channel. After that, a dropped connection is reopened in the
// background after the stream's `retry:` hint (WithReconnectDelay until
// the stream sends one, doubling up to MaxReconnectDelay while attempts
// fail), resuming from the last id received, so that every event arrives
// once. A 4xx answer to a reconnection ends the watch.
//
// The channel closes when ctx ends or the watch ends; the goroutine that
// feeds it returns then too. Events that do not decode are skipped.
func (c *Client) Watch(ctx context.Context, election, lastEventID string) (<-chan Event, error) {
	w := &watcher{c: c, election: election, lastID: lastEventID, delay: c.reconnectDelay}
	body, err := w.connect(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		w.run(ctx, body, out)
	}()
	return out, nil
}

// watcher is the state of one Watch: where to resume and how long to wait.
type watcher struct {
	c        *Client
	election string
	lastID   string
	delay    time.Duration // the reconnection delay: the stream's hint or the default
}

// connect opens the stream from w.lastID.
func (w *watcher) connect(ctx context.Context) (io.ReadCloser, error) {
	segments := []string{"v1", "events"}
	if w.election != "" {
		segments = []string{"v1", "elections", w.election, "events"}
	}
	target, err := w.c.endpoint(segments...)
	if err != nil {
		return nil, err
	}
	req, err := w.c.newRequest(ctx, http.MethodGet, target, nil, "")
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if w.lastID != "" {
		req.Header.Set("Last-Event-ID", w.lastID)
	}
	resp, err := w.c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readProblem(resp)
	}
	return resp.Body, nil
}

// run reads streams until ctx ends, reconnecting as Watch says.
func (w *watcher) run(ctx context.Context, body io.ReadCloser, out chan<- Event) {
	failures := 0
	for {
		if body != nil {
			failures = 0
			err := w.read(ctx, body, out)
			body.Close()
			if ctx.Err() != nil {
				return
			}
			w.c.log.LogAttrs(ctx, slog.LevelDebug, "event stream dropped; reconnecting",
				slog.String("election", w.election), slog.String("last_event_id", w.lastID), slog.Any("err", err))
		}
		wait := w.delay
		for range min(failures, 5) {
			wait *= 2
		}
		wait = min(wait, max(MaxReconnectDelay, w.delay))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var err error
		body, err = w.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var p *Problem
			if errors.As(err, &p) && p.Status >= 400 && p.Status < 500 && p.Status != http.StatusTooManyRequests {
				w.c.log.LogAttrs(ctx, slog.LevelWarn, "event stream refused; watch ends",
					slog.String("election", w.election), slog.Any("err", err))
				return
			}
			failures++
			body = nil
		}
	}
}

// read delivers the events of one connection until it ends.
func (w *watcher) read(ctx context.Context, body io.Reader, out chan<- Event) error {
	r := newSSEReader(body, w.lastID)
	for {
		f, err := r.next()
		if r.retry > 0 {
			w.delay = r.retry
		}
		if err != nil {
			return err
		}
		ev, derr := decodeEvent(f)
		// Move the cursor even past an event that does not decode, so a
		// reconnection does not fetch it again forever.
		w.lastID = r.lastID
		if derr != nil {
			w.c.log.LogAttrs(ctx, slog.LevelWarn, "skipping an event that does not decode", slog.Any("err", derr))
			continue
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
