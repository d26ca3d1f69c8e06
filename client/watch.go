package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
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
// once. A connection silent for longer than the idle timeout
// (WithWatchIdleTimeout) counts as dropped. A 4xx answer to a
// reconnection ends the watch.
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

// read delivers the events of one connection until it ends, or until it
// stays silent for the idle timeout, which closes body.
func (w *watcher) read(ctx context.Context, body io.ReadCloser, out chan<- Event) error {
	idle := newIdleReader(body, w.c.idleTimeout)
	defer idle.stop()
	r := newSSEReader(idle, w.lastID)
	for {
		f, err := r.next()
		if r.retry > 0 {
			w.delay = r.retry
		}
		if err != nil {
			if idle.fired.Load() {
				return fmt.Errorf("no byte for %s: %w", w.c.idleTimeout, errIdle)
			}
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
		// A receiver that takes its time is no silence of the stream.
		idle.pause()
		select {
		case out <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
		idle.resume()
	}
}

// errIdle is a connection closed for its silence.
var errIdle = errors.New("event stream idle")

// idleReader reads a connection's body and closes it once no byte came
// for d, so that a read blocked on a peer that vanished returns.
type idleReader struct {
	body  io.ReadCloser
	d     time.Duration
	timer *time.Timer // nil: no idle timeout
	fired atomic.Bool
}

func newIdleReader(body io.ReadCloser, d time.Duration) *idleReader {
	r := &idleReader{body: body, d: d}
	if d > 0 {
		r.timer = time.AfterFunc(d, func() {
			r.fired.Store(true)
			_ = body.Close()
		})
	}
	return r
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if n > 0 {
		r.resume()
	}
	return n, err
}

// pause stops the clock while nothing is read on purpose.
func (r *idleReader) pause() {
	if r.timer != nil {
		r.timer.Stop()
	}
}

// resume starts the clock again from now.
func (r *idleReader) resume() {
	if r.timer != nil && !r.fired.Load() {
		r.timer.Reset(r.d)
	}
}

func (r *idleReader) stop() { r.pause() }
