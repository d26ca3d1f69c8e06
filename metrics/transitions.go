package metrics

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/ctxwait"
)

// retryWatch is how long Transitions waits before it watches again after
// the backend refused a watch.
const retryWatch = time.Second

// reasonNone is the reason label of a transition that has no reason: the
// first leader.begin of an election, and leader.error (its text is the
// candidate's, never a label).
const reasonNone = "none"

func newTransitionsCounter(reg prometheus.Registerer, electionLabel bool) *prometheus.CounterVec {
	labels := []string{"type", "reason"}
	if electionLabel {
		labels = append([]string{"election"}, labels...)
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "leader_transitions_total",
		Help: "Leader transitions seen by this replica: leader.begin (reason: how the previous leadership ended), leader.end (resigned, expired, error) and leader.error.",
	}, labels)
	reg.MustRegister(c)
	return c
}

// Transitions counts the leader transitions of a gateway's event stream in
// elector_leader_transitions_total. Create it with Metrics.ObserveGateway
// and run Run (or RunAfter) once.
type Transitions struct {
	m  *Metrics
	gw *gateway.Gateway
}

// Run watches every election from now on and counts leader.begin,
// leader.end and leader.error by reason until ctx ends; then it returns
// nil. A watch that ends is resumed after the last event counted; when the
// backend no longer holds that cursor, counting resumes from a fresh
// snapshot (the events in between are not counted) and a warning is
// logged. A backend that refuses to watch is asked again every second.
func (t *Transitions) Run(ctx context.Context) error {
	return t.RunAfter(ctx, "")
}

// RunAfter is Run counting the events after cursor rather than from now:
// a server passes what gateway.Gateway.Begin returned, so that the
// transitions of its first requests are counted. An empty cursor is now.
func (t *Transitions) RunAfter(ctx context.Context, cursor string) error {
	var err error
	if cursor == "" {
		cursor, err = t.snapshot(ctx)
	}
	for ctx.Err() == nil {
		if err != nil {
			t.m.log.LogAttrs(ctx, slog.LevelWarn, "metrics: watching leader transitions failed; retrying", slog.Any("err", err))
			if !ctxwait.Sleep(ctx, retryWatch) {
				break
			}
			if cursor == "" {
				cursor, err = t.snapshot(ctx)
				continue
			}
		}
		var ch <-chan gateway.Event
		ch, err = t.gw.Watch(ctx, "", cursor)
		if errors.Is(err, gateway.ErrCursorExpired) {
			t.m.log.LogAttrs(ctx, slog.LevelWarn, "metrics: event cursor expired; leader transitions in the gap are not counted", slog.String("cursor", cursor))
			cursor, err = t.snapshot(ctx)
			continue
		}
		if err != nil {
			continue
		}
		n := 0
		for ev := range ch {
			t.count(ev)
			cursor = ev.ID
			n++
		}
		if n == 0 && !ctxwait.Sleep(ctx, retryWatch/10) {
			break // a watch that ends at once must not spin
		}
	}
	return nil
}

// snapshot returns the cursor of the present: counting starts after it.
func (t *Transitions) snapshot(ctx context.Context) (string, error) {
	_, cursor, err := t.gw.Elections(ctx)
	return cursor, err
}

// count adds ev to the counter if it is a leader transition.
func (t *Transitions) count(ev gateway.Event) {
	switch ev.Type {
	case gateway.EventLeaderBegin, gateway.EventLeaderEnd, gateway.EventLeaderError:
	default:
		return
	}
	reason := ev.Reason
	if reason == "" {
		reason = reasonNone
	}
	if t.m.electionLabels {
		t.m.transitions.WithLabelValues(t.m.labeled.label(ev.Election, t.m.labelLimit), string(ev.Type), reason).Inc()
		return
	}
	t.m.transitions.WithLabelValues(string(ev.Type), reason).Inc()
}
