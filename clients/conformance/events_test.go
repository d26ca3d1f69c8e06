package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// eventLog is the suite's own view of an election: every event of a
// Watch straight to the gateway, with the Go client, in order. Scenarios
// compare what the drivers report with it.
type eventLog struct {
	mu      sync.Mutex
	events  []client.Event
	changed chan struct{}
}

// watchElection follows election on the gateway at url until the test
// ends; the first connection is open when it returns.
func watchElection(t *testing.T, url, election string) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events, err := client.New(url, client.WithReconnectDelay(100*time.Millisecond)).Watch(ctx, election, "")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &eventLog{changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events {
			l.mu.Lock()
			l.events = append(l.events, ev)
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l
}

// Events returns the events so far.
func (l *eventLog) Events() []client.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]client.Event(nil), l.events...)
}

// await waits until an event matches and returns the first that does,
// failing the test after waitLimit.
func (l *eventLog) await(t *testing.T, what string, match func(client.Event) bool) client.Event {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, ev := range l.events {
			if match(ev) {
				l.mu.Unlock()
				return ev
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			var b strings.Builder
			for _, ev := range l.Events() {
				fmt.Fprintf(&b, "\t%s %s %+v\n", ev.ID, ev.Type, ev.Data)
			}
			t.Fatalf("the gateway's stream had no %s within %s; it had:\n%s", what, waitLimit, b.String())
		}
	}
}

// leaderEnd matches the leader.end of candidate id.
func leaderEnd(id string) func(client.Event) bool {
	return func(ev client.Event) bool {
		return ev.Type == client.EventLeaderEnd && ev.Data.Candidate != nil && ev.Data.Candidate.ID == id
	}
}
