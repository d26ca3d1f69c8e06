package backendtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// runSessions runs the session subtests through a Gateway over b: sessions
// are the Gateway's over any backend (over its KV), or the backend's own
// where it is a gateway.Sessioner, and behave the same either way.
func runSessions(t *testing.T, b gateway.Backend) {
	g := gateway.New(b, gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, b gateway.Backend, g *gateway.Gateway)
	}{
		{"HeartbeatRenewsEveryCandidacy", testSessionRenewsEach},
		{"CandidacyHeartbeatRenewsTheSession", testSessionCandidacyHeartbeat},
		{"ExpiryEndsEveryCandidacy", testSessionExpiry},
		{"CloseResignsEveryCandidacy", testSessionClose},
		{"ResignLeavesTheOthers", testSessionResignOne},
		{"TokensAreChecked", testSessionTokens},
		{"OneCandidacyPerElection", testSessionOnePerElection},
		{"TransferAwayFromASessionLeader", testSessionTransfer},
		{"DeposedLeaderIsToldItNoLongerLeads", testSessionDeposed},
	} {
		t.Run("Sessions/"+tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, b, g)
		})
	}
}

// openSession opens a session of ttl and fails the test on error.
func openSession(t *testing.T, g *gateway.Gateway, ttl time.Duration) (gateway.Session, string) {
	t.Helper()
	s, tok, err := g.OpenSession(context.Background(), ttl)
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	if s.ID == "" || s.TTL < ttl || len(s.Candidates) != 0 {
		t.Fatalf("opened session %+v, want an id, TTL %s and no candidacy", s, ttl)
	}
	return s, tok
}

// campaignIn campaigns id into election in session s and fails the test on
// error.
func campaignIn(t *testing.T, g *gateway.Gateway, election, id string, s gateway.Session, tok string) gateway.Status {
	t.Helper()
	st, got, err := g.Campaign(context.Background(), election, gateway.CampaignRequest{ID: id, Session: s.ID, SessionToken: tok})
	if err != nil {
		t.Fatalf("campaign %s/%s in session %s: %v", election, id, s.ID, err)
	}
	if got != tok {
		t.Fatalf("campaign in a session answered a token of its own; want the session's")
	}
	if st.Candidate.TTL < s.TTL {
		t.Fatalf("candidacy of TTL %s in a session of TTL %s", st.Candidate.TTL, s.TTL)
	}
	return st
}

// candidateIn returns candidate id of election's snapshot.
func candidateIn(t *testing.T, b gateway.Backend, election, id string) (gateway.Candidate, bool) {
	t.Helper()
	st, ok := gateway.StatusOf(snapshot(t, b, election), id)
	return st.Candidate, ok
}

// sessionEntry returns the answer's entry of election.
func sessionEntry(s gateway.Session, election string) (gateway.SessionCandidate, bool) {
	for _, c := range s.Candidates {
		if c.Election == election {
			return c, true
		}
	}
	return gateway.SessionCandidate{}, false
}

func testSessionRenewsEach(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 30*time.Second)
	e1, e2 := name("sess-renew"), name("sess-renew")
	if st := campaignIn(t, g, e1, "a", s, tok); st.Candidate.State != gateway.StateLeader {
		t.Fatalf("first candidacy of %s: %+v, want leader", e1, st)
	}
	campaignIn(t, g, e2, "a", s, tok)
	before1, _ := candidateIn(t, b, e1, "a")
	before2, _ := candidateIn(t, b, e2, "a")
	began := time.Now()
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil {
		t.Fatalf("keep session: %v", err)
	}
	if len(kept.Candidates) != 2 || kept.Candidates[0].Election > kept.Candidates[1].Election {
		t.Fatalf("kept session lists %+v; want both candidacies, by election", kept.Candidates)
	}
	for _, e := range []string{e1, e2} {
		c, ok := sessionEntry(kept, e)
		if !ok || c.ID != "a" || c.ExpiresAt.Before(began.Add(s.TTL-time.Second)) {
			t.Fatalf("kept session's entry of %s: %+v (ok %v); want candidate a renewed by the TTL from %s", e, c, ok, began)
		}
	}
	// Renewed on the backend itself, not only in the answer.
	eventually.NoError(t, eventWait, "both candidacies renewed", func() error {
		after1, ok1 := candidateIn(t, b, e1, "a")
		after2, ok2 := candidateIn(t, b, e2, "a")
		if !ok1 || !ok2 || !after1.ExpiresAt.After(before1.ExpiresAt) || !after2.ExpiresAt.After(before2.ExpiresAt) {
			return fmt.Errorf("expiries %v → %v and %v → %v", before1.ExpiresAt, after1.ExpiresAt, before2.ExpiresAt, after2.ExpiresAt)
		}
		return nil
	})
}

func testSessionCandidacyHeartbeat(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	s, tok := openSession(t, g, 30*time.Second)
	e1, e2 := name("sess-own"), name("sess-own")
	campaignIn(t, g, e1, "a", s, tok)
	campaignIn(t, g, e2, "b", s, tok)
	before, _ := candidateIn(t, b, e2, "b")
	if _, err := g.Heartbeat(context.Background(), e1, "a", tok); err != nil {
		t.Fatalf("heartbeat of a candidacy with its session's token: %v", err)
	}
	eventually.NoError(t, eventWait, "the other candidacy renewed", func() error {
		after, ok := candidateIn(t, b, e2, "b")
		if !ok || !after.ExpiresAt.After(before.ExpiresAt) {
			return fmt.Errorf("expiry of b in %s: %v → %v", e2, before.ExpiresAt, after.ExpiresAt)
		}
		return nil
	})
}

func testSessionExpiry(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 2*time.Second)
	e1, e2 := name("sess-expiry"), name("sess-expiry")
	r1, r2 := watch(t, b, e1, ""), watch(t, b, e2, "")
	campaignIn(t, g, e1, "a", s, tok)
	campaignIn(t, g, e2, "a", s, tok)
	for _, e := range []string{e1, e2} {
		th, _ := campaign(t, b, e, "b", 30*time.Second)
		_ = th
	}
	// No heartbeat: both candidacies end with the session, and b leads
	// in each.
	for _, r := range []*recorder{r1, r2} {
		got := r.wait(t, eventWait, "b leads after the session expired", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
		if !has(got, gateway.EventLeaderEnd, "a", gateway.ReasonExpired) {
			t.Fatalf("events %s: want a's leadership to end as expired", describe(got))
		}
	}
	eventually.NoError(t, eventWait, "the session is gone", func() error {
		_, err := g.KeepSession(ctx, s.ID, tok)
		if !errors.Is(err, gateway.ErrSessionNotFound) {
			return fmt.Errorf("keep an expired session: %v, want ErrSessionNotFound", err)
		}
		return nil
	})
	if _, _, err := g.Campaign(ctx, name("sess-expiry"), gateway.CampaignRequest{ID: "c", Session: s.ID, SessionToken: tok}); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("campaign in an expired session: %v, want ErrSessionNotFound", err)
	}
}

func testSessionClose(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 30*time.Second)
	e1, e2 := name("sess-close"), name("sess-close")
	for _, e := range []string{e1, e2} {
		if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Second, HandoverDelay: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	r1, r2 := watch(t, b, e1, ""), watch(t, b, e2, "")
	campaignIn(t, g, e1, "a", s, tok)
	campaignIn(t, g, e2, "a", s, tok)
	campaign(t, b, e1, "b", 30*time.Second)
	campaign(t, b, e2, "b", 30*time.Second)
	if err := g.CloseSession(ctx, s.ID, tok); err != nil {
		t.Fatalf("close session: %v", err)
	}
	// Resignations: b leads at once, the minute's handover delay unused.
	for _, r := range []*recorder{r1, r2} {
		got := r.wait(t, eventWait, "b leads after the close", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
		if !has(got, gateway.EventLeaderEnd, "a", gateway.ReasonResigned) || !has(got, gateway.EventCandidateLeft, "a", gateway.ReasonResigned) {
			t.Fatalf("events %s: want a to end and leave as resigned", describe(got))
		}
	}
	if _, err := g.KeepSession(ctx, s.ID, tok); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("keep a closed session: %v, want ErrSessionNotFound", err)
	}
	if err := g.CloseSession(ctx, s.ID, tok); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("close a closed session: %v, want ErrSessionNotFound", err)
	}
}

func testSessionResignOne(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 30*time.Second)
	e1, e2 := name("sess-resign"), name("sess-resign")
	campaignIn(t, g, e1, "a", s, tok)
	campaignIn(t, g, e2, "a", s, tok)
	if err := g.Resign(ctx, e1, "a", tok); err != nil {
		t.Fatalf("resign one candidacy of a session: %v", err)
	}
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil {
		t.Fatalf("keep the session after one resigned: %v", err)
	}
	if len(kept.Candidates) != 1 || kept.Candidates[0].Election != e2 {
		t.Fatalf("session lists %+v after a's resignation in %s; want only its candidacy in %s", kept.Candidates, e1, e2)
	}
	if c, ok := candidateIn(t, b, e2, "a"); !ok || c.State != gateway.StateLeader {
		t.Fatalf("the other candidacy: %+v (ok %v), want it still leading", c, ok)
	}
	// The session campaigns in e1 again.
	campaignIn(t, g, e1, "a", s, tok)
}

func testSessionTokens(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 30*time.Second)
	other, otherTok := openSession(t, g, 30*time.Second)
	if _, err := g.KeepSession(ctx, s.ID, otherTok); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("keep with another session's token: %v, want ErrTokenMismatch", err)
	}
	if err := g.CloseSession(ctx, s.ID, otherTok); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("close with another session's token: %v, want ErrTokenMismatch", err)
	}
	e := name("sess-token")
	if _, _, err := g.Campaign(ctx, e, gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: otherTok}); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("campaign with another session's token: %v, want ErrTokenMismatch", err)
	}
	if _, _, err := g.Campaign(ctx, e, gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: gateway.NewToken()}); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("campaign with a candidate's token: %v, want ErrTokenMismatch", err)
	}
	if _, _, err := g.Campaign(ctx, e, gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok, TTL: time.Minute}); !errors.Is(err, gateway.ErrInvalid) {
		t.Fatalf("campaign in a session with a TTL of its own: %v, want ErrInvalid", err)
	}
	campaignIn(t, g, e, "a", s, tok)
	if _, err := g.Heartbeat(ctx, e, "a", otherTok); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("heartbeat with another session's token: %v, want ErrTokenMismatch", err)
	}
	if kept, err := g.KeepSession(ctx, other.ID, otherTok); err != nil || len(kept.Candidates) != 0 {
		t.Fatalf("the other session: %+v, %v; want it kept, with no candidacy", kept, err)
	}
}

func testSessionOnePerElection(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 30*time.Second)
	e := name("sess-once")
	campaignIn(t, g, e, "a", s, tok)
	if _, _, err := g.Campaign(ctx, e, gateway.CampaignRequest{ID: "b", Session: s.ID, SessionToken: tok}); !errors.Is(err, gateway.ErrSessionInElection) {
		t.Fatalf("a second candidacy of the session in %s: %v, want ErrSessionInElection", e, err)
	}
	if _, _, err := g.Campaign(ctx, e, gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok}); !errors.Is(err, gateway.ErrCandidateExists) {
		t.Fatalf("the same candidacy again: %v, want ErrCandidateExists", err)
	}
	if st := snapshot(t, b, e); len(st.Candidates) != 1 {
		t.Fatalf("election %s has %d candidates; want the session's one", e, len(st.Candidates))
	}
}

// testSessionTransfer asks a session's leader to hand over while the
// session keeps heartbeating. A backend may let the transfer complete when
// the leader's own TTL runs out (its session's heartbeats do not renew
// it), or keep it leading until it hands over (its session's lease renews
// it); either way, no heartbeat of the session may promise the leader a
// time past the moment the target begins.
func testSessionTransfer(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 2*time.Second)
	e := name("sess-transfer")
	rec := watch(t, b, e, "")
	campaignIn(t, g, e, "a", s, tok)
	thb, _ := campaign(t, b, e, "b", 30*time.Second)
	keepAlive(t, b, e, "b", thb, 30*time.Second)
	if _, err := g.Transfer(ctx, e, "", "b", tok); err != nil {
		t.Fatalf("transfer from the session's leader: %v", err)
	}
	var promised time.Time // the latest expiry the session's heartbeats answered for a
	deadline := time.Now().Add(4 * s.TTL)
	for time.Now().Before(deadline) && !has(rec.all(), gateway.EventLeaderBegin, "b", "") {
		kept, err := g.KeepSession(ctx, s.ID, tok)
		if err != nil {
			t.Fatalf("keep session: %v", err)
		}
		if c, ok := sessionEntry(kept, e); ok && c.ExpiresAt.After(promised) && !has(rec.all(), gateway.EventLeaderBegin, "b", "") {
			promised = c.ExpiresAt
		}
		waitFor(s.TTL / 8)
	}
	if !has(rec.all(), gateway.EventLeaderBegin, "b", "") {
		// Still leading on its session's renewals: it hands over.
		if _, err := g.Handover(ctx, e, "a", tok); err != nil {
			t.Fatalf("handover: %v", err)
		}
		rec.wait(t, eventWait, "b begins after the handover", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
		return
	}
	got := rec.all()
	i := find(got, gateway.EventLeaderBegin, "b", "")
	if promised.After(got[i].Time) {
		t.Fatalf("b began at %s, but a heartbeat of the session promised leader a its candidacy until %s", got[i].Time, promised)
	}
}

// testSessionDeposed ends a session leader's holdership without its word
// (the gateway's verdict on its begin) while the session keeps
// heartbeating: its candidacy stays in line and renewed, and every
// answer of the session's heartbeat from then on says that it no longer
// holds that term, so that its process stops acting; and once the next
// leader begins, no answer still says it does.
func testSessionDeposed(t *testing.T, b gateway.Backend, g *gateway.Gateway) {
	ctx := context.Background()
	s, tok := openSession(t, g, 2*time.Second)
	e := name("sess-deposed")
	rec := watch(t, b, e, "")
	st := campaignIn(t, g, e, "a", s, tok)
	if st.Candidate.State != gateway.StateLeader {
		t.Fatalf("first candidacy: %+v, want leader", st)
	}
	thb, _ := campaign(t, b, e, "b", 30*time.Second)
	keepAlive(t, b, e, "b", thb, 30*time.Second)
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil {
		t.Fatalf("keep session: %v", err)
	}
	if c, ok := sessionEntry(kept, e); !ok || c.State != gateway.StateLeader || c.Term != st.Term {
		t.Fatalf("before the verdict, the session's heartbeat says %+v (ok %v); want a leading with term %d", c, ok, st.Term)
	}
	if ok, err := g.FailBegin(ctx, e, "a", gateway.HashToken(tok), st.Term, "begin hook failed"); err != nil || !ok {
		t.Fatalf("fail a's begin: %v, %v", ok, err)
	}
	deadline := time.Now().Add(4 * s.TTL)
	for time.Now().Before(deadline) {
		kept, err := g.KeepSession(ctx, s.ID, tok)
		if err != nil {
			t.Fatalf("keep session: %v", err)
		}
		if c, ok := sessionEntry(kept, e); ok && c.State == gateway.StateLeader && c.Term == st.Term {
			t.Fatalf("after the verdict on term %d, the session's heartbeat still says a leads it: %+v", st.Term, c)
		}
		if has(rec.all(), gateway.EventLeaderBegin, "b", "") {
			return
		}
		waitFor(s.TTL / 8)
	}
	rec.wait(t, eventWait, "b begins", func(ev []gateway.Event) bool { return has(ev, gateway.EventLeaderBegin, "b", "") })
}

// waitFor lets d pass: the pace of the heartbeats a test makes.
func waitFor(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
