package client_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// TestCandidacyHandsOverWhenAsked: a leader whose next heartbeat is
// minutes away learns of a transfer from the event stream, stops (its
// context ends, its callbacks return, the slow one included) and only then
// hands over; the target leads with the next term.
func TestCandidacyHandsOverWhenAsked(t *testing.T) {
	srv := newGateway(t)
	const ttl = 10 * time.Minute
	var j journal
	// a's end callback is slow: it returns only when the test lets it.
	stopping, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	cfgA := client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: ttl,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			j.add("a started %d", term)
			<-ctx.Done()
			j.add("a returned %d %v", term, context.Cause(ctx) != nil)
		},
		OnStoppedLeading: func(term uint64, reason string) {
			once.Do(func() { close(stopping) })
			<-release
			j.add("a stopped %d %s", term, reason)
		}}
	a := newCandidacy(t, cfgA)
	run(t, a)
	letGo := sync.OnceFunc(func() { close(release) })
	t.Cleanup(letGo) // before a is stopped, should the test fail with the callback waiting
	waitUntil(t, 5*time.Second, "a leads", func() bool { return a.Standing().Leading })
	b := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "b", TTL: ttl,
		OnStartedLeading: func(ctx context.Context, term uint64) { j.add("b started %d", term) }})
	run(t, b)
	waitUntil(t, 5*time.Second, "b in line", func() bool { return b.Standing().State == client.StateFollower })

	cl := client.New(srv.URL)
	e, err := cl.Transfer(context.Background(), "e", "b", "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Transfer == nil || e.Transfer.To != "b" || e.Transfer.Reason != "transferred" {
		t.Fatalf("election after the request: %+v", e)
	}
	select {
	case <-stopping:
	case <-time.After(10 * time.Second):
		t.Fatalf("a's end callback was not called; callbacks: %q", j.get())
	}
	// While the callback runs, a has not handed over.
	if l, err := cl.Leader(context.Background(), "e"); err != nil || l.ID != "a" || l.Term != 1 {
		t.Fatalf("leader while a's end callback runs: %+v, %v; want a in term 1", l, err)
	}
	letGo()
	waitUntil(t, 10*time.Second, "b leads", func() bool { return slices.Contains(j.get(), "b started 2") })
	want := []string{"a started 1", "a returned 1 true", "a stopped 1 transferred", "b started 2"}
	if got := j.get(); !slices.Equal(got, want) {
		t.Fatalf("callbacks: %q, want %q", got, want)
	}
	waitUntil(t, 5*time.Second, "a follows b", func() bool {
		st := a.Standing()
		return !st.Leading && st.State == client.StateFollower && st.Leader == "b"
	})
	if l, err := cl.Leader(context.Background(), "e"); err != nil || l.ID != "b" || l.Term != 2 {
		t.Fatalf("leader %+v, %v; want b in term 2", l, err)
	}
}

// TestCandidacyExplicitHandoverWaitsForTheCaller: with ExplicitHandover the
// candidacy stops leading when asked but hands over only when told.
func TestCandidacyExplicitHandoverWaitsForTheCaller(t *testing.T) {
	srv := newGateway(t)
	const ttl = 10 * time.Minute
	a := newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "e", ID: "a", TTL: ttl, ExplicitHandover: true})
	run(t, a)
	waitUntil(t, 5*time.Second, "a leads", func() bool { return a.Standing().Leading })
	cl := client.New(srv.URL)
	if _, _, err := cl.Campaign(context.Background(), "e", client.CampaignRequest{ID: "b", TTL: ttl, Priority: 0}); err != nil {
		t.Fatal(err)
	}
	if err := a.Handover(context.Background()); !errors.Is(err, client.ErrNoTransfer) {
		t.Fatalf("handover with nothing pending: %v, want ErrNoTransfer", err)
	}
	if _, err := cl.Transfer(context.Background(), "e", "b", ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "a stops leading", func() bool {
		st := a.Standing()
		return !st.Leading && st.Reason == client.ReasonTransferred
	})
	if l, err := cl.Leader(context.Background(), "e"); err != nil || l.ID != "a" {
		t.Fatalf("before the caller hands over: leader %+v, %v; want a still holding the slot", l, err)
	}
	if err := a.Handover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l, err := cl.Leader(context.Background(), "e"); err != nil || l.ID != "b" || l.Term != 2 {
		t.Fatalf("after the handover: leader %+v, %v; want b in term 2", l, err)
	}
}

func TestClientTransferErrors(t *testing.T) {
	srv := newGateway(t)
	cl := client.New(srv.URL)
	ctx := context.Background()
	_, ta, err := cl.Campaign(ctx, "e", client.CampaignRequest{ID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.Campaign(ctx, "e", client.CampaignRequest{ID: "b", TTL: time.Minute, Priority: 3}); err != nil {
		t.Fatal(err)
	}
	if cs, err := cl.Candidates(ctx, "e"); err != nil || cs.Candidates[1].Priority != 3 {
		t.Fatalf("candidates %+v, %v", cs, err)
	}
	for _, tt := range []struct {
		name   string
		to, tk string
		want   error
	}{
		{"to the leader", "a", "", client.ErrNotFollower},
		{"with a token not the leader's", "b", "ect_wrong", client.ErrNotLeader},
	} {
		if _, err := cl.Transfer(ctx, "e", tt.to, tt.tk); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := cl.Transfer(ctx, "e", "b", ta); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Heartbeat(ctx, "e", "a", ta)
	var p *client.Problem
	if !errors.Is(err, client.ErrTransferPending) || !errors.As(err, &p) || p.Ext["transfer"] == nil {
		t.Fatalf("heartbeat of the leader: %v, want ErrTransferPending with the transfer", err)
	}
	st, err := cl.Handover(ctx, "e", "a", ta)
	if err != nil || st.State != client.StateFollower || st.Leader == nil || st.Leader.ID != "b" {
		t.Fatalf("handover: %+v, %v", st, err)
	}
}

func TestClientConfigurePreempt(t *testing.T) {
	srv := newGateway(t)
	cl := client.New(srv.URL)
	ctx := context.Background()
	on, delay := true, 2*time.Second
	e, err := cl.Configure(ctx, "e", client.SettingsPatch{Preempt: &on, HandoverDelay: &delay})
	if err != nil || !e.Settings.Preempt || time.Duration(e.Settings.HandoverDelay) != delay {
		t.Fatalf("configure: %+v, %v", e.Settings, err)
	}
	if _, _, err := cl.Campaign(ctx, "e", client.CampaignRequest{ID: "a", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st, _, err := cl.Campaign(ctx, "e", client.CampaignRequest{ID: "b", TTL: time.Minute, Priority: 5})
	if err != nil || st.Transfer == nil || st.Transfer.To != "b" || st.Transfer.Reason != "preempted" {
		t.Fatalf("campaign of higher priority: %+v, %v", st.Transfer, err)
	}
	e, err = cl.Configure(ctx, "e", client.SettingsPatch{})
	if err != nil || !e.Settings.Preempt || e.Transfer == nil {
		t.Fatalf("an empty patch changed something: %+v, %v", e, err)
	}
}

// TestCancelTransferKeepsTheLeader: an operator's transfer to a follower
// is cancelled before the leader hands over; the leader goes on in its
// term, and a second cancellation finds nothing to cancel.
func TestCancelTransferKeepsTheLeader(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	cl := client.New(srv.URL)
	_, ta, err := cl.Campaign(ctx, "c", client.CampaignRequest{ID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.Campaign(ctx, "c", client.CampaignRequest{ID: "b", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Transfer(ctx, "c", "b", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CancelTransfer(ctx, "c", "not-the-leaders"); !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("cancel with another token: %v, want ErrNotLeader", err)
	}
	e, err := cl.CancelTransfer(ctx, "c", ta)
	if err != nil {
		t.Fatal(err)
	}
	if e.Transfer != nil || e.Leader == nil || e.Leader.ID != "a" || e.Leader.Term != 1 {
		t.Fatalf("election after the cancellation: transfer %+v, leader %+v", e.Transfer, e.Leader)
	}
	if st, err := cl.Heartbeat(ctx, "c", "a", ta); err != nil || st.State != client.StateLeader {
		t.Fatalf("heartbeat of the leader: %+v, %v", st, err)
	}
	if _, err := cl.CancelTransfer(ctx, "c", ""); !errors.Is(err, client.ErrNoTransfer) {
		t.Fatalf("second cancellation: %v, want ErrNoTransfer", err)
	}
}
