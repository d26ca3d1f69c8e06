package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

func quietGateway(b gateway.Backend) *gateway.Gateway {
	return gateway.New(b, gateway.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// openSession opens a session of ttl on g, failing t if it cannot.
func openSession(t *testing.T, g *gateway.Gateway, ttl time.Duration) (gateway.Session, string) {
	t.Helper()
	s, tok, err := g.OpenSession(t.Context(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return s, tok
}

// TestSessionSweepRemovesOnlyExpiredSessions: the records and names of a
// session expired past the grace go, as do names without a record; a live
// session's stay.
func TestSessionSweepRemovesOnlyExpiredSessions(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	g := quietGateway(b)
	now := time.Now()
	gateway.SessionClock(g, func() time.Time { return now })
	dead, deadTok := openSession(t, g, 2*time.Second)
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "a", Session: dead.ID, SessionToken: deadTok}); err != nil {
		t.Fatal(err)
	}
	// A name whose session has no record: a campaign that raced a close.
	orphan, _ := json.Marshal(map[string]string{"election": "x", "id": "y"})
	if _, err := b.Create(ctx, gateway.SessionMemberKey("ses_"+strings.Repeat("b", 24), "x"), orphan); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	live, liveTok := openSession(t, g, 2*time.Second)
	gateway.SweepSessions(ctx, g)
	items, err := b.List(ctx, "sessions")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Key != "sessions/"+live.ID+"/record" {
		t.Fatalf("after the sweep: %v; want only the live session's record", items)
	}
	if _, err := g.KeepSession(ctx, live.ID, liveTok); err != nil {
		t.Fatalf("keep the live session: %v", err)
	}
}

// TestSessionDropsANameWithoutItsCandidacy: a replica that died between
// naming a candidacy in a session and campaigning leaves a name; the
// session's next heartbeat drops it.
func TestSessionDropsANameWithoutItsCandidacy(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	g := quietGateway(b)
	s, tok := openSession(t, g, 30*time.Second)
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok}); err != nil {
		t.Fatal(err)
	}
	ghost, _ := json.Marshal(map[string]string{"election": "ghost", "id": "b"})
	if _, err := b.Create(ctx, gateway.SessionMemberKey(s.ID, "ghost"), ghost); err != nil {
		t.Fatal(err)
	}
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept.Candidates) != 1 || kept.Candidates[0].Election != "jobs" {
		t.Fatalf("kept session lists %+v; want only the candidacy in jobs", kept.Candidates)
	}
	if _, err := b.Get(ctx, gateway.SessionMemberKey(s.ID, "ghost")); err == nil {
		t.Fatal("the name without a candidacy is still there")
	}
	// The election is free for the session again.
	if _, _, err := g.Campaign(ctx, "ghost", gateway.CampaignRequest{ID: "c", Session: s.ID, SessionToken: tok}); err != nil {
		t.Fatalf("campaign where the dropped name was: %v", err)
	}
}

// TestSessionTakesAStaleNameOver: a name left in an election whose
// candidacy is gone does not refuse the session a new one there.
func TestSessionTakesAStaleNameOver(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	g := quietGateway(b)
	s, tok := openSession(t, g, 30*time.Second)
	stale, _ := json.Marshal(map[string]string{"election": "jobs", "id": "gone"})
	if _, err := b.Create(ctx, gateway.SessionMemberKey(s.ID, "jobs"), stale); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok}); err != nil {
		t.Fatalf("campaign over a stale name: %v", err)
	}
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil || len(kept.Candidates) != 1 || kept.Candidates[0].ID != "a" {
		t.Fatalf("kept session: %+v, %v; want candidacy a alone", kept, err)
	}
}

// TestSessionKeepsAYoungName: a name written a moment ago whose candidacy
// the backend does not hold yet is a campaign under way: a heartbeat
// neither drops nor lists it, and another campaign of the session into
// its election is refused.
func TestSessionKeepsAYoungName(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	g := quietGateway(b)
	s, tok := openSession(t, g, 30*time.Second)
	young, _ := json.Marshal(map[string]any{"election": "jobs", "id": "a", "joined_at": time.Now()})
	if _, err := b.Create(ctx, gateway.SessionMemberKey(s.ID, "jobs"), young); err != nil {
		t.Fatal(err)
	}
	kept, err := g.KeepSession(ctx, s.ID, tok)
	if err != nil || len(kept.Candidates) != 0 {
		t.Fatalf("kept session: %+v, %v; want no candidacy listed", kept, err)
	}
	if _, err := b.Get(ctx, gateway.SessionMemberKey(s.ID, "jobs")); err != nil {
		t.Fatalf("the young name was dropped: %v", err)
	}
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "b", Session: s.ID, SessionToken: tok}); !errors.Is(err, gateway.ErrSessionInElection) {
		t.Fatalf("another candidacy beside a campaign under way: %v, want ErrSessionInElection", err)
	}
	// The campaign under way lands, and is the session's.
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok}); err != nil {
		t.Fatalf("the campaign under way: %v", err)
	}
	if kept, err := g.KeepSession(ctx, s.ID, tok); err != nil || len(kept.Candidates) != 1 {
		t.Fatalf("kept session: %+v, %v; want candidacy a", kept, err)
	}
}

// TestSessionEndsItsCandidacies: no campaign joins a session that is
// being closed, and a candidacy whose session has ended is not kept by
// heartbeats of its own.
func TestSessionEndsItsCandidacies(t *testing.T) {
	ctx := context.Background()
	b := memory.New()
	g := quietGateway(b)
	now := time.Now()
	gateway.SessionClock(g, func() time.Time { return now })
	s, tok := openSession(t, g, 10*time.Second)
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "a", Session: s.ID, SessionToken: tok}); err != nil {
		t.Fatal(err)
	}
	// The session expires (no heartbeat of it), while the candidacy's
	// own heartbeats would keep it: the next one ends it.
	now = now.Add(time.Minute)
	if _, err := g.Heartbeat(ctx, "jobs", "a", tok); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Fatalf("heartbeat of a candidacy whose session expired: %v, want ErrCandidateNotFound", err)
	}
	if e, err := b.Election(ctx, "jobs"); err == nil && len(e.Candidates) != 0 {
		t.Fatalf("the candidacy outlived its session: %+v", e.Candidates)
	}
	// A close that began: campaigns are refused.
	s2, tok2 := openSession(t, g, 10*time.Second)
	item, err := b.Get(ctx, "sessions/"+s2.ID+"/record")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(item.Value, &rec); err != nil {
		t.Fatal(err)
	}
	rec["closing"] = true
	v, _ := json.Marshal(rec)
	if _, err := b.Update(ctx, item.Key, v, item.Revision); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Campaign(ctx, "jobs", gateway.CampaignRequest{ID: "b", Session: s2.ID, SessionToken: tok2}); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("campaign in a session being closed: %v, want ErrSessionNotFound", err)
	}
	if err := g.CloseSession(ctx, s2.ID, tok2); err != nil {
		t.Fatalf("a second close finishes the first: %v", err)
	}
}
