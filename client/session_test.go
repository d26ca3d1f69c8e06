package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// openSession opens a session with ttl on c, failing the test if it cannot.
func openSession(t *testing.T, c *client.Client, ttl time.Duration) (client.Session, string) {
	t.Helper()
	s, token, err := c.OpenSession(context.Background(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID == "" || token == "" || time.Duration(s.TTL) != ttl || s.ExpiresAt.IsZero() || s.Candidates == nil || len(s.Candidates) != 0 {
		t.Fatalf("open session: %+v (token %t)", s, token != "")
	}
	return s, token
}

// TestSessionHeartbeatRenewsAndCloseResignsEveryCandidacy: one session
// campaigns in two elections; its heartbeat renews both, and closing it
// resigns both, the follower leading at once.
func TestSessionHeartbeatRenewsAndCloseResignsEveryCandidacy(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	s, token := openSession(t, c, 5*time.Second)

	terms := map[string]uint64{}
	for _, election := range []string{"billing", "payroll"} {
		st, candToken, err := c.Campaign(ctx, election, client.CampaignRequest{ID: "node-a", Session: s.ID, SessionToken: token})
		if err != nil {
			t.Fatalf("campaign in %s: %v", election, err)
		}
		if st.State != client.StateLeader || st.TTL != s.TTL || candToken != token {
			t.Fatalf("campaign in %s: %+v; want a leader with the session's TTL and token", election, st)
		}
		terms[election] = st.Term
	}
	_, tokB, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}

	before, _ := c.Candidate(ctx, "payroll", "node-a")
	time.Sleep(20 * time.Millisecond)
	sent := time.Now()
	hb, err := c.HeartbeatSession(ctx, s.ID, token)
	if err != nil {
		t.Fatal(err)
	}
	if hb.ID != s.ID || hb.TTL != s.TTL || !hb.ExpiresAt.After(s.ExpiresAt.Time) || len(hb.Candidates) != 2 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	for i, election := range []string{"billing", "payroll"} {
		sc := hb.Candidates[i]
		if sc.Election != election || sc.ID != "node-a" || !sc.ExpiresAt.Equal(hb.ExpiresAt.Time) || sc.State != client.StateLeader || sc.Term != terms[election] {
			t.Errorf("heartbeat's candidate %d: %+v; want node-a of %s leading with term %d, expiring with the session", i, sc, election, terms[election])
		}
		deadline, ok := hb.StepDownDeadline(election, terms[election], sent)
		if want := sent.Add(5*time.Second - client.StepDownMargin(5*time.Second)); !ok || !deadline.Equal(want) {
			t.Errorf("step-down deadline in %s: %v, %t; want %v", election, deadline, ok, want)
		}
	}
	if after, err := c.Candidate(ctx, "payroll", "node-a"); err != nil || !after.ExpiresAt.After(before.ExpiresAt.Time) {
		t.Fatalf("payroll's candidacy after the session's heartbeat: %+v, %v; want its expiry past %v", after, err, before.ExpiresAt)
	}
	// A candidacy's own heartbeat takes the session's token.
	if st, err := c.Heartbeat(ctx, "billing", "node-a", token); err != nil || st.State != client.StateLeader {
		t.Fatalf("a candidacy's own heartbeat: %+v, %v", st, err)
	}

	if err := c.CloseSession(ctx, s.ID, token); err != nil {
		t.Fatal(err)
	}
	if cs, err := c.Candidates(ctx, "payroll"); err != nil || len(cs.Candidates) != 0 {
		t.Fatalf("payroll after the close: %+v, %v; want nobody", cs, err)
	}
	if l, err := c.Leader(ctx, "billing"); err != nil || l.ID != "node-b" || l.Term <= terms["billing"] {
		t.Fatalf("billing's leader after the close: %+v, %v; want node-b with a later term", l, err)
	}
	if _, err := c.HeartbeatSession(ctx, s.ID, token); !errors.Is(err, client.ErrSessionNotFound) {
		t.Fatalf("heartbeat of a closed session: %v, want ErrSessionNotFound", err)
	}
	if _, err := c.Heartbeat(ctx, "payroll", "node-a", token); !errors.Is(err, client.ErrCandidateNotFound) {
		t.Fatalf("heartbeat of a candidacy of a closed session: %v, want ErrCandidateNotFound", err)
	}
	_ = c.Resign(ctx, "billing", "node-b", tokB)

	// No TTL: the gateway's default, which no campaign then repeats.
	d, dToken, err := c.OpenSession(ctx, 0)
	if err != nil || d.TTL != client.Duration(10*time.Second) {
		t.Fatalf("open a session with the default TTL: %+v, %v", d, err)
	}
	_ = c.CloseSession(ctx, d.ID, dToken)
}

// TestSessionOutlivesItsTTLWhileItHeartbeatsAndEndsWhenItStops: heartbeats
// of the session alone keep its candidacy past the TTL; once they stop,
// the candidacy and the session expire.
func TestSessionOutlivesItsTTLWhileItHeartbeatsAndEndsWhenItStops(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	const ttl = time.Second
	s, token := openSession(t, c, ttl)
	if _, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", Session: s.ID, SessionToken: token}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(2 * ttl); time.Now().Before(end); time.Sleep(ttl / 4) {
		if _, err := c.HeartbeatSession(ctx, s.ID, token); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := c.Leader(ctx, "billing"); err != nil || l.ID != "node-a" {
		t.Fatalf("leader after twice the TTL of session heartbeats: %+v, %v", l, err)
	}
	waitUntil(t, 10*time.Second, "the session's candidacy to expire", func() bool {
		_, err := c.Candidate(ctx, "billing", "node-a")
		return errors.Is(err, client.ErrCandidateNotFound)
	})
	if _, err := c.HeartbeatSession(ctx, s.ID, token); !errors.Is(err, client.ErrSessionNotFound) {
		t.Fatalf("heartbeat of an expired session: %v, want ErrSessionNotFound", err)
	}
}

// TestSessionLeaderAskedToHandOverIsNotRenewed: a transfer away from a
// leader in a session leaves its candidacy's expiry where it was, and its
// step-down deadline with it, while the session's moves on.
func TestSessionLeaderAskedToHandOverIsNotRenewed(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	const ttl = 10 * time.Second
	s, token := openSession(t, c, ttl)
	st, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", Session: s.ID, SessionToken: token})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Transfer(ctx, "billing", "node-b", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	sent := time.Now()
	hb, err := c.HeartbeatSession(ctx, s.ID, token)
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := hb.Candidate("billing")
	if !ok || !sc.ExpiresAt.Before(hb.ExpiresAt.Time) || sc.State != client.StateLeader || sc.Term != st.Term {
		t.Fatalf("heartbeat: %+v; want node-a of billing still leading with term %d, expiring before the session", hb, st.Term)
	}
	deadline, ok := hb.StepDownDeadline("billing", st.Term, sent)
	if !ok {
		t.Fatalf("no step-down deadline for the leader asked to hand over: %+v", hb)
	}
	if limit := sent.Add(ttl - client.StepDownMargin(ttl) - 50*time.Millisecond); deadline.After(limit) {
		t.Fatalf("step-down deadline %v, after %v: the heartbeat did not renew the candidacy", deadline, limit)
	}
	if _, ok := hb.StepDownDeadline("payroll", st.Term, sent); ok {
		t.Fatal("a step-down deadline in an election the session is not in")
	}
	_ = c.CloseSession(ctx, s.ID, token)
}

func TestSessionProblemsMatchTheirSentinels(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	s, token := openSession(t, c, time.Minute)
	if _, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", Session: s.ID, SessionToken: token}); err != nil {
		t.Fatal(err)
	}
	other, otherToken := openSession(t, c, time.Minute)
	_, errMismatch := c.HeartbeatSession(ctx, s.ID, otherToken)
	errMissing := c.CloseSession(ctx, s.ID, "")
	_, _, errInElection := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b", Session: s.ID, SessionToken: token})
	_, _, errCampaignMissing := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-c", Session: s.ID})
	_, _, errTTL := c.Campaign(ctx, "payroll", client.CampaignRequest{ID: "node-a", TTL: time.Minute, Session: s.ID, SessionToken: token})
	_, _, errBadID := c.Campaign(ctx, "payroll", client.CampaignRequest{ID: "node-a", Session: "not-a-session", SessionToken: token})
	if err := c.CloseSession(ctx, other.ID, otherToken); err != nil {
		t.Fatal(err)
	}
	_, _, errClosed := c.Campaign(ctx, "payroll", client.CampaignRequest{ID: "node-a", Session: other.ID, SessionToken: otherToken})
	_, _, errBadOpen := c.OpenSession(ctx, 500*time.Hour)

	tests := []struct {
		name     string
		err      error
		sentinel error
		slug     string
	}{
		{"heartbeat with another session's token", errMismatch, client.ErrSessionTokenMismatch, "session-token-mismatch"},
		{"close without a token", errMissing, client.ErrSessionTokenMissing, "session-token-missing"},
		{"a second campaign in one election", errInElection, client.ErrSessionInElection, "session-in-election"},
		{"campaign in a session without its token", errCampaignMissing, client.ErrSessionTokenMissing, "session-token-missing"},
		{"campaign in a session with a ttl", errTTL, client.ErrInvalidRequest, "invalid-request"},
		{"campaign in a malformed session id", errBadID, client.ErrInvalidRequest, "invalid-request"},
		{"campaign in a closed session", errClosed, client.ErrSessionNotFound, "session-not-found"},
		{"open with a ttl out of bounds", errBadOpen, client.ErrInvalidRequest, "invalid-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.sentinel) {
				t.Fatalf("%v is not %v", tt.err, tt.sentinel)
			}
			var p *client.Problem
			if !errors.As(tt.err, &p) || p.Slug() != tt.slug || p.Detail == "" {
				t.Fatalf("problem %+v, want slug %s", p, tt.slug)
			}
			if errors.Is(tt.err, client.ErrTokenMismatch) || errors.Is(tt.err, client.ErrCandidateNotFound) {
				t.Errorf("%v matches a candidate's sentinel", tt.err)
			}
		})
	}
	_ = c.CloseSession(ctx, s.ID, token)
}

// TestSessionStepDownDeadline: the deadline counts what the heartbeat
// gave each candidacy from when it was sent, by the session's times alone,
// and there is none unless the candidacy leads with the caller's term.
func TestSessionStepDownDeadline(t *testing.T) {
	gw := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)                // the heartbeat began, on the gateway's clock
	sent := time.Date(2031, 1, 1, 0, 0, 0, 0, time.FixedZone("", 3600)) // and was sent, on ours
	const ttl = 10 * time.Second
	margin := client.StepDownMargin(ttl)
	renewed := client.Time{Time: gw.Add(ttl)}
	s := client.Session{ID: "ses_x", TTL: client.Duration(ttl), ExpiresAt: client.Time{Time: gw.Add(ttl)},
		Candidates: []client.SessionCandidate{
			{Election: "renewed", ID: "a", State: client.StateLeader, Term: 7, ExpiresAt: renewed},
			{Election: "handing-over", ID: "a", State: client.StateLeader, Term: 7, ExpiresAt: client.Time{Time: gw.Add(3 * time.Second)}},
			{Election: "odd", ID: "a", State: client.StateLeader, Term: 7, ExpiresAt: client.Time{Time: gw.Add(time.Hour)}},
			// Renewed by the heartbeat, but deposed: it must not lead.
			{Election: "deposed", ID: "a", State: client.StateError, Term: 8, ExpiresAt: renewed},
			{Election: "demoted", ID: "a", State: client.StateFollower, Term: 7, ExpiresAt: renewed},
			// Leads again, with a later term than the caller's.
			{Election: "re-elected", ID: "a", State: client.StateLeader, Term: 9, ExpiresAt: renewed},
			// An answer without state or term, as from an older gateway.
			{Election: "unstated", ID: "a", ExpiresAt: renewed},
		}}
	for _, tt := range []struct {
		election string
		term     uint64
		want     time.Time
		ok       bool
	}{
		{"renewed", 7, sent.Add(ttl - margin), true},
		{"handing-over", 7, sent.Add(3*time.Second - margin), true},
		{"odd", 7, sent.Add(ttl - margin), true}, // never more than the TTL
		{"elsewhere", 7, time.Time{}, false},
		{"renewed", 6, time.Time{}, false}, // leads, but with another term
		{"renewed", 8, time.Time{}, false},
		{"deposed", 7, time.Time{}, false},
		{"deposed", 8, time.Time{}, false},
		{"demoted", 7, time.Time{}, false},
		{"re-elected", 7, time.Time{}, false},
		{"re-elected", 9, sent.Add(ttl - margin), true},
		{"unstated", 0, time.Time{}, false},
		{"unstated", 7, time.Time{}, false},
	} {
		t.Run(fmt.Sprintf("%s/term-%d", tt.election, tt.term), func(t *testing.T) {
			got, ok := s.StepDownDeadline(tt.election, tt.term, sent)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Fatalf("StepDownDeadline(%q, %d) = %v, %t; want %v, %t", tt.election, tt.term, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestSessionCandidateReadsStateAndTerm: a heartbeat answer's entries
// carry each candidacy's state and term.
func TestSessionCandidateReadsStateAndTerm(t *testing.T) {
	var s client.Session
	doc := `{"id":"ses_x","ttl":"10s","expires_at":"2026-11-27T10:00:10Z","candidates":[
		{"election":"billing","id":"a","state":"leader","term":42,"expires_at":"2026-11-27T10:00:10Z"},
		{"election":"payroll","id":"a","state":"error","term":3,"expires_at":"2026-11-27T10:00:10Z"}]}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	if c, _ := s.Candidate("billing"); c.State != client.StateLeader || c.Term != 42 {
		t.Fatalf("billing: %+v", c)
	}
	if c, _ := s.Candidate("payroll"); c.State != client.StateError || c.Term != 3 {
		t.Fatalf("payroll: %+v", c)
	}
	if _, ok := s.StepDownDeadline("billing", 42, sent); !ok {
		t.Error("no deadline for billing's leader with its term")
	}
	if _, ok := s.StepDownDeadline("payroll", 3, sent); ok {
		t.Error("a deadline for payroll's candidacy in error")
	}
}
