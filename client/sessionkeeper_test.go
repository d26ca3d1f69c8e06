package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// keepSession opens a kept session of ttl on c; it is closed when the
// test ends.
func keepSession(t *testing.T, c *client.Client, ttl time.Duration) *client.SessionKeeper {
	t.Helper()
	k, err := c.KeepSession(context.Background(), client.SessionConfig{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() == "" || k.Token() == "" || k.TTL() != ttl || k.Err() != nil {
		t.Fatalf("kept session: id %q, ttl %v, err %v", k.ID(), k.TTL(), k.Err())
	}
	t.Cleanup(func() { _ = k.Close(context.Background()) })
	return k
}

// answers waits for n more heartbeat answers of k.
func answers(t *testing.T, k *client.SessionKeeper, n int) client.Session {
	t.Helper()
	var s client.Session
	for range n {
		_, _, next := k.Last()
		select {
		case <-next:
		case <-time.After(10 * k.TTL()):
			t.Fatalf("no heartbeat answer of the session within %v", 10*k.TTL())
		}
		if k.Err() != nil {
			t.Fatalf("the keeper ended: %v", k.Err())
		}
		s, _, _ = k.Last()
	}
	return s
}

// TestSessionKeeperKeepsItsLeadersPastTheTTL: a kept session heartbeats
// by itself, so its candidacies in two elections lead with the same terms
// well past its TTL, and their Lead contexts live on; Close ends them
// first, then resigns both.
func TestSessionKeeperKeepsItsLeadersPastTheTTL(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	const ttl = time.Second
	k := keepSession(t, c, ttl)
	leads := map[string]context.Context{}
	terms := map[string]uint64{}
	for _, election := range []string{"billing", "payroll"} {
		st, sent, err := k.Campaign(ctx, election, client.CampaignRequest{ID: "node-a"})
		if err != nil || st.State != client.StateLeader {
			t.Fatalf("campaign in %s: %+v, %v", election, st, err)
		}
		lctx, cancel := k.Lead(ctx, election, st.Term, sent)
		t.Cleanup(cancel)
		leads[election], terms[election] = lctx, st.Term
	}
	s := answers(t, k, 7) // more than twice the TTL
	for election, lctx := range leads {
		if err := context.Cause(lctx); err != nil {
			t.Fatalf("%s: the leadership ended: %v", election, err)
		}
		if sc, ok := s.Candidate(election); !ok || sc.State != client.StateLeader || sc.Term != terms[election] {
			t.Fatalf("%s in the last answer: %+v, %v; want a leader at term %d", election, sc, ok, terms[election])
		}
		if l, err := c.Leader(ctx, election); err != nil || l.ID != "node-a" || l.Term != terms[election] {
			t.Fatalf("leader of %s: %+v, %v", election, l, err)
		}
	}

	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	<-k.Done()
	for election, lctx := range leads {
		if !errors.Is(context.Cause(lctx), client.ErrSessionEnded) {
			t.Errorf("%s: the leadership after Close: %v; want ErrSessionEnded", election, context.Cause(lctx))
		}
		if _, err := c.Candidate(ctx, election, "node-a"); !errors.Is(err, client.ErrCandidateNotFound) {
			t.Errorf("%s: the candidacy after Close: %v; want it resigned", election, err)
		}
	}
	if !errors.Is(k.Err(), client.ErrSessionEnded) {
		t.Errorf("the keeper's end: %v; want ErrSessionEnded", k.Err())
	}
	if lctx, _ := k.Lead(ctx, "billing", terms["billing"], time.Now()); !errors.Is(context.Cause(lctx), client.ErrSessionEnded) {
		t.Errorf("a Lead after the end: %v; want it ended", context.Cause(lctx))
	}
}

// TestSessionKeeperLeadEndsWithTheLeadership: a leader's context ends as
// soon as a heartbeat answer no longer shows it leading with its term:
// after a transfer away from it, and after its candidacy resigned.
func TestSessionKeeperLeadEndsWithTheLeadership(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	k := keepSession(t, c, time.Second)

	st, sent, err := k.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a"})
	if err != nil || st.State != client.StateLeader {
		t.Fatalf("campaign: %+v, %v", st, err)
	}
	transferred, cancel := k.Lead(ctx, "billing", st.Term, sent)
	defer cancel()
	if _, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Transfer(ctx, "billing", "node-b", ""); err != nil {
		t.Fatal(err)
	}

	st, sent, err = k.Campaign(ctx, "payroll", client.CampaignRequest{ID: "node-a"})
	if err != nil || st.State != client.StateLeader {
		t.Fatalf("campaign: %+v, %v", st, err)
	}
	resigned, cancel := k.Lead(ctx, "payroll", st.Term, sent)
	defer cancel()
	if err := c.Resign(ctx, "payroll", "node-a", k.Token()); err != nil {
		t.Fatal(err)
	}

	for name, lctx := range map[string]context.Context{"transferred": transferred, "resigned": resigned} {
		select {
		case <-lctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the leadership did not end", name)
		}
		if !errors.Is(context.Cause(lctx), client.ErrLeadershipLost) {
			t.Errorf("%s: %v; want ErrLeadershipLost", name, context.Cause(lctx))
		}
	}
	if k.Err() != nil {
		t.Fatalf("the keeper ended: %v", k.Err())
	}
}

// TestSessionKeeperStepsDownWhenNoHeartbeatGetsThrough: cut off from the
// gateway, a leader's context ends by the step-down rule while the keeper
// goes on trying; back in touch after the session expired, the keeper
// ends with ErrSessionNotFound.
func TestSessionKeeperStepsDownWhenNoHeartbeatGetsThrough(t *testing.T) {
	srv := newGateway(t)
	proxy := newCuttableProxy(t, srv.URL)
	ctx := context.Background()
	c := client.New(proxy.URL)
	const ttl = 2 * time.Second
	k := keepSession(t, c, ttl)
	st, sent, err := k.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a"})
	if err != nil || st.State != client.StateLeader {
		t.Fatalf("campaign: %+v, %v", st, err)
	}
	lctx, cancel := k.Lead(ctx, "billing", st.Term, sent)
	defer cancel()
	answers(t, k, 1)

	proxy.cut.Store(true)
	_, last, _ := k.Last()
	select {
	case <-lctx.Done():
	case <-time.After(10 * ttl):
		t.Fatal("the leadership did not end while no heartbeat got through")
	}
	if !errors.Is(context.Cause(lctx), client.ErrLeadershipLost) {
		t.Fatalf("the leadership ended with %v; want ErrLeadershipLost", context.Cause(lctx))
	}
	if _, got, _ := k.Last(); !got.Equal(last) {
		t.Fatalf("a heartbeat got through the cut: sent %v, after %v", got, last)
	}
	if k.Err() != nil {
		t.Fatalf("the keeper ended while the gateway was out of reach: %v", k.Err())
	}

	waitUntil(t, 10*time.Second, "the session's candidacy to expire at the gateway", func() bool {
		_, err := client.New(srv.URL).Candidate(ctx, "billing", "node-a")
		return errors.Is(err, client.ErrCandidateNotFound)
	})
	proxy.cut.Store(false)
	select {
	case <-k.Done():
	case <-time.After(10 * ttl):
		t.Fatal("the keeper did not end once the gateway said the session was gone")
	}
	if !errors.Is(k.Err(), client.ErrSessionNotFound) {
		t.Fatalf("the keeper ended with %v; want ErrSessionNotFound", k.Err())
	}
}
