package etcd_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/webhooks"
)

// gatewayOn runs a gateway (its hub and the backend's reconciler) over b
// until the test ends.
func gatewayOn(t *testing.T, b *etcd.Backend) *gateway.Gateway {
	t.Helper()
	g := gateway.New(b, gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

// capture is a webhook receiver that keeps each delivery's body by its
// webhook-id.
type capture struct {
	mu     sync.Mutex
	bodies map[string][]byte
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies[r.Header.Get(webhooks.HeaderID)] = body
	c.mu.Unlock()
}

func (c *capture) get(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.bodies[id]
	return b, ok
}

// TestEventsAreTheSameBytesOnEveryReplica: two replicas' streams, a
// stream resumed later from a cursor (which derives the events again from
// etcd's history) and the webhooks one replica delivers carry, for every
// event id, the same bytes, timestamps included, through an expiry of a
// follower, a transfer, a resignation, an early revocation of the leader
// and the expiry that follows it.
func TestEventsAreTheSameBytesOnEveryReplica(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	const prefix, e = "identical", "same"
	b1, b2 := newBackend(t, ms, prefix), newBackend(t, ms, prefix)
	g1, g2 := gatewayOn(t, b1), gatewayOn(t, b2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	rc := &capture{bodies: map[string][]byte{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	svc := webhooks.New(g1, b1, webhooks.Config{AllowPrivateNetworks: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go func() { _ = svc.Run(ctx) }()
	if _, _, err := svc.CreateSubscription(ctx, e, webhooks.SubscriptionRequest{URL: srv.URL}); err != nil {
		t.Fatal(err)
	}
	var streams [2]func() []gateway.Event
	for i, g := range []*gateway.Gateway{g1, g2} {
		ch, err := g.Watch(ctx, e, "")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []gateway.Event
		go func() {
			for ev := range ch {
				mu.Lock()
				got = append(got, ev)
				mu.Unlock()
			}
		}()
		streams[i] = func() []gateway.Event { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
	}

	tha := campaignAs(t, b1, e, "a", 2*time.Second)
	keepBeating(t, b1, e, "a", tha)
	thb := campaignAs(t, b2, e, "b", 2*time.Second)
	keepBeating(t, b2, e, "b", thb)
	campaignAs(t, b1, e, "c", time.Second) // never heartbeats: expires
	thd := campaignAs(t, b2, e, "d", 2*time.Second)
	keepBeating(t, b1, e, "d", thd)
	has := func(typ gateway.EventType, id, reason string) func() bool {
		return func() bool {
			return slices.ContainsFunc(streams[1](), func(ev gateway.Event) bool {
				return ev.Type == typ && ev.Candidate.ID == id && ev.Reason == reason
			})
		}
	}
	eventually.True(t, 10*time.Second, "c expires", has(gateway.EventCandidateLeft, "c", gateway.ReasonExpired))
	if _, err := b2.Transfer(ctx, e, "b", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.Handover(ctx, e, "a", tha); err != nil {
		t.Fatal(err)
	}
	if err := b1.Resign(ctx, e, "b", thb); err != nil {
		t.Fatal(err)
	}
	waitLine(t, b2, e, "d:leader", "a:follower")
	if _, err := b2.Heartbeat(ctx, e, "d", thd); err != nil {
		t.Fatal(err)
	}
	revokeLease(t, b1, leaseOf(t, b1, prefix, e, "d"))
	eventually.True(t, 10*time.Second, "a leads after d's promise", has(gateway.EventLeaderBegin, "a", gateway.ReasonExpired))
	campaignAs(t, b2, e, "z", 2*time.Second) // the last event
	eventually.True(t, 10*time.Second, "both streams at the end", func() bool {
		return has(gateway.EventCandidateJoined, "z", gateway.ReasonCampaign)() && slices.ContainsFunc(streams[0](), func(ev gateway.Event) bool {
			return ev.Type == gateway.EventCandidateJoined && ev.Candidate.ID == "z"
		})
	})

	one, two := streams[0](), streams[1]()
	bytesOf := func(evs []gateway.Event) map[string]string {
		m := map[string]string{}
		for _, ev := range evs {
			j, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			m[ev.ID] = string(j)
		}
		return m
	}
	b1s, b2s := bytesOf(one), bytesOf(two)
	if len(b1s) != len(b2s) {
		t.Fatalf("replica 1 streamed %d events, replica 2 %d", len(b1s), len(b2s))
	}
	for id, j := range b1s {
		if b2s[id] != j {
			t.Errorf("event %s:\nreplica 1 %s\nreplica 2 %s", id, j, b2s[id])
		}
	}
	// Derived again from etcd's history, from a cursor.
	w, err := b2.Watch(ctx, e, one[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range one[1:] {
		select {
		case got := <-w:
			j, _ := json.Marshal(got)
			if got.ID != ev.ID || string(j) != b1s[ev.ID] {
				t.Errorf("resumed stream: %s %s, want %s %s", got.ID, j, ev.ID, b1s[ev.ID])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("resumed stream: no event %s", ev.ID)
		}
	}
	eventually.True(t, 10*time.Second, "every webhook delivered", func() bool {
		_, ok := rc.get(one[len(one)-1].ID)
		return ok
	})
	for _, ev := range one {
		body, ok := rc.get(ev.ID)
		if !ok {
			t.Errorf("no webhook for event %s", ev.ID)
		} else if string(body) != b1s[ev.ID] {
			t.Errorf("webhook of event %s:\nbody   %s\nstream %s", ev.ID, body, b1s[ev.ID])
		}
	}
	for _, want := range []struct {
		typ    gateway.EventType
		id     string
		reason string
	}{
		{gateway.EventCandidateLeft, "c", gateway.ReasonExpired},
		{gateway.EventLeaderEnd, "a", gateway.ReasonTransferred},
		{gateway.EventLeaderEnd, "b", gateway.ReasonResigned},
		{gateway.EventLeaderBegin, "d", gateway.ReasonResigned},
		{gateway.EventLeaderEnd, "d", gateway.ReasonExpired},
		{gateway.EventLeaderBegin, "a", gateway.ReasonExpired},
	} {
		if !slices.ContainsFunc(one, func(ev gateway.Event) bool {
			return ev.Type == want.typ && ev.Candidate.ID == want.id && ev.Reason == want.reason
		}) {
			t.Errorf("no %s of %s (%s) among %v", want.typ, want.id, want.reason, one)
		}
	}
}
