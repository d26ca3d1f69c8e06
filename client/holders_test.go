package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// TestCandidaciesHoldTogether: in an election of two holders two
// Candidacies lead at once, each with its own term, while a third waits;
// when one of them resigns, the third takes its slot with a later term.
// Observe follows the longest-standing holder with every holder listed.
func TestCandidaciesHoldTogether(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	cl := client.New(srv.URL)
	two := 2
	if e, err := cl.Configure(ctx, "sem", client.SettingsPatch{Holders: &two}); err != nil || e.Settings.Holders != 2 {
		t.Fatalf("configure 2 holders: %+v, %v", e.Settings, err)
	}
	obsCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen, err := cl.Observe(obsCtx, "sem")
	if err != nil {
		t.Fatal(err)
	}
	cands := map[string]*client.Candidacy{}
	stops := map[string]func() error{}
	for _, id := range []string{"a", "b", "c"} {
		cands[id] = newCandidacy(t, client.CandidacyConfig{Gateways: []string{srv.URL}, Election: "sem", ID: id, TTL: 10 * time.Second})
		stops[id] = run(t, cands[id])
		waitUntil(t, 10*time.Second, id+" campaigned", func() bool { return cands[id].Standing().State != "" })
	}
	// Each hears of the other at its next heartbeat (every TTL/3).
	waitUntil(t, 10*time.Second, "a and b hold, and know that two hold", func() bool {
		a, b := cands["a"].Standing(), cands["b"].Standing()
		return a.Leading && b.Leading && a.Holders == 2 && b.Holders == 2
	})
	a, b := cands["a"].Standing(), cands["b"].Standing()
	if a.Term == b.Term || b.Leader != "a" {
		t.Fatalf("a %+v, b %+v: want each its own term, two holders, a the longest-standing", a, b)
	}
	if c := cands["c"].Standing(); c.Leading || c.State != client.StateFollower {
		t.Fatalf("c %+v, want a follower beside two holders", c)
	}
	l, err := cl.Leader(ctx, "sem")
	if err != nil || l.ID != "a" || len(l.Holders) != 2 || l.Holders[1].ID != "b" || l.Holders[1].Term != b.Term {
		t.Fatalf("leader %+v, %v; want a, with a and b as holders", l, err)
	}
	if err := stops["a"](); err != nil { // resigns on the way out
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "c takes a's slot", func() bool { return cands["c"].Standing().Leading })
	if c := cands["c"].Standing(); c.Term <= b.Term || c.Leader != "b" {
		t.Fatalf("c %+v: want a term after b's %d, b now the longest-standing", c, b.Term)
	}
	// Observe: the longest-standing holder, and every holder, as they change.
	var last client.Leader
	deadline := time.After(10 * time.Second)
	for last.ID != "b" || len(last.Holders) != 2 || last.Holders[1].ID != "c" {
		select {
		case last = <-seen:
		case <-deadline:
			t.Fatalf("Observe's last value %+v; want b leading with b and c holding", last)
		}
	}
}

// TestTransferFromNamesTheHolder: with two holders an operator's transfer
// names the holder that hands over.
func TestTransferFromNamesTheHolder(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	cl := client.New(srv.URL)
	two := 2
	if _, err := cl.Configure(ctx, "tf", client.SettingsPatch{Holders: &two}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := cl.Campaign(ctx, "tf", client.CampaignRequest{ID: id, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Transfer(ctx, "tf", "c", ""); err == nil {
		t.Fatal("a transfer naming no holder of two was accepted")
	}
	e, err := cl.TransferFrom(ctx, "tf", "b", "c", "")
	if err != nil || e.Transfer == nil || e.Transfer.From != "b" || e.Transfer.To != "c" || len(e.Holders) != 2 {
		t.Fatalf("transfer from b: %+v, %v", e, err)
	}
}
