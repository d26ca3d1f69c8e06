package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestCampaignOneWrite: once every replica is declared to run this
// version, a campaign into an empty election is one transaction that
// also acknowledges it; its term is that transaction's revision, which
// another replica derives alike, and the events are those of a campaign
// acknowledged after its write (candidate.joined, then leader.begin).
// Before the declaration, two transactions; behind a holder, one either
// way.
func TestCampaignOneWrite(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b, other := newBackend(t, ms, "one"), newBackend(t, ms, "one")
	ctx := context.Background()
	n, err := b.CountRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	campaign := func(election, id string) gateway.Status {
		t.Helper()
		n.Take()
		st, err := b.Campaign(ctx, election, gateway.Candidacy{ID: id, TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	txns := func() int { t.Helper(); return n.Take()["txn"] }
	if st := campaign("before", "a"); st.Candidate.State != gateway.StateLeader || txns() != 2 {
		t.Fatalf("before the declaration: %s", st.Candidate.State)
	}
	if err := b.DeclareUpgraded(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := b.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := other.Watch(ctx, "after", head)
	if err != nil {
		t.Fatal(err)
	}
	lead := campaign("after", "a")
	if got := txns(); lead.Candidate.State != gateway.StateLeader || got != 1 {
		t.Fatalf("after the declaration: %s in %d transactions, want leader in 1", lead.Candidate.State, got)
	}
	if st := campaign("after", "b"); st.Candidate.State != gateway.StateFollower || txns() != 1 {
		t.Fatalf("behind a holder: %s", st.Candidate.State)
	}
	e, err := other.Election(ctx, "after")
	if err != nil {
		t.Fatal(err)
	}
	if e.Leader == nil || e.Leader.ID != "a" || e.Term != lead.Term || e.Term == 0 {
		t.Fatalf("the other replica: leader %+v term %d, want a at term %d", e.Leader, e.Term, lead.Term)
	}
	var got []gateway.EventType
	for ev := range w {
		got = append(got, ev.Type)
		if ev.Type == gateway.EventLeaderBegin && (ev.Term != e.Term || ev.Candidate == nil || ev.Candidate.ID != "a") {
			t.Errorf("leader.begin of %+v at term %d, want a at %d", ev.Candidate, ev.Term, e.Term)
		}
		if len(got) == 3 {
			break
		}
	}
	want := []gateway.EventType{gateway.EventCandidateJoined, gateway.EventLeaderBegin, gateway.EventCandidateJoined}
	if !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// TestCampaignWritesSettingsOnlyWhereNeeded: a declared campaign into an
// empty election on the default settings creates it without a settings
// key, its lead record making it exist; every other campaign into a new
// election writes the key, as before. Either way the election, with the
// settings it was created with, outlives its candidate on every replica,
// a Configure then writes the key, and a deletion removes it all.
func TestCampaignWritesSettingsOnlyWhereNeeded(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	custom := gateway.DefaultSettings()
	custom.ErrorCooldown = 3 * time.Second
	for _, tc := range []struct {
		name         string
		declared     bool
		session      bool
		native       bool // a native etcd candidacy in line first
		defaults     gateway.Settings
		wantSettings bool
	}{
		{name: "declared", declared: true, defaults: gateway.DefaultSettings()},
		{name: "declared in a session", declared: true, session: true, defaults: gateway.DefaultSettings()},
		{name: "declared, other defaults", declared: true, defaults: custom, wantSettings: true},
		{name: "declared, behind a native candidacy", declared: true, native: true, defaults: gateway.DefaultSettings(), wantSettings: true},
		{name: "undeclared", defaults: gateway.DefaultSettings(), wantSettings: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			prefix := "settings-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			b, other := newBackend(t, ms, prefix), newBackend(t, ms, prefix)
			if tc.declared {
				if err := b.DeclareUpgraded(ctx); err != nil {
					t.Fatal(err)
				}
			}
			const e = "e"
			if tc.native {
				lease, err := b.Client().Grant(ctx, 60)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := b.Client().Put(ctx, fmt.Sprintf("%s/%s/%x", prefix, e, lease.ID), "native", clientv3.WithLease(lease.ID)); err != nil {
					t.Fatal(err)
				}
			}
			c := gateway.Candidacy{ID: "a", TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}
			if tc.session {
				c.Session, c.TokenHash = openSession(t, b, 20*time.Second)
				c.TTL = 0
			}
			if _, err := b.Campaign(ctx, e, c, tc.defaults); err != nil {
				t.Fatal(err)
			}
			set, err := b.Client().Get(ctx, prefix+"/_elector/settings/"+e)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(set.Kvs) == 1; got != tc.wantSettings {
				t.Errorf("settings key written: %v, want %v", got, tc.wantSettings)
			}
			if err := b.Resign(ctx, e, "a", c.TokenHash); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*etcd.Backend{b, other} {
				got, err := r.Election(ctx, e)
				if err != nil || got.Settings != tc.defaults {
					t.Fatalf("after the resignation: %+v, %v; want the settings %+v", got.Settings, err, tc.defaults)
				}
			}
			changed := tc.defaults
			changed.HandoverDelay = time.Second
			if got, err := b.Configure(ctx, e, changed); err != nil || got.Settings != changed {
				t.Fatalf("configure: %+v, %v", got.Settings, err)
			}
			if got, err := other.Election(ctx, e); err != nil || got.Settings != changed {
				t.Fatalf("the other replica after configure: %+v, %v", got.Settings, err)
			}
			if tc.native {
				return // the native candidacy keeps the election from being deleted
			}
			if err := b.DeleteElection(ctx, e); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Election(ctx, e); !errors.Is(err, gateway.ErrElectionNotFound) {
				t.Fatalf("after the deletion: %v, want not found", err)
			}
			left, err := b.Client().Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range left.Kvs {
				if k := string(kv.Key); strings.HasSuffix(k, "/"+e) && !strings.Contains(k, "/_elector/mark/") {
					t.Errorf("after the deletion: %s is left", k)
				}
			}
		})
	}
}

// TestNewerDeclaredVersionRefused: a replica older than the version the
// prefix declares says so and serves nothing rather than misread.
func TestNewerDeclaredVersionRefused(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "newer")
	ctx := context.Background()
	if _, err := b.Client().Put(ctx, "newer/_elector/version", `{"min":3}`); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, time.Minute, "ping to answer unavailable", func() bool { return errors.Is(b.Ping(ctx), gateway.ErrUnavailable) })
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", TTL: 20 * time.Second, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("campaign: %v, want unavailable", err)
	}
	if _, err := b.Client().Put(ctx, "newer/_elector/version", `{"min":2}`); err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, time.Minute, "ping at a version it runs", func() error { return b.Ping(ctx) })
}
