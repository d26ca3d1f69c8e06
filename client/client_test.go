package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

func TestCampaignHeartbeatResignHandsOver(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	a, tokA, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-a", TTL: 2 * time.Second, Metadata: []byte(`{"addr":"10.0.0.7:8080"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if a.State != client.StateLeader || a.Term == 0 || tokA == "" || time.Duration(a.TTL) != 2*time.Second {
		t.Fatalf("campaign: %+v", a)
	}
	_, tokB, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: "node-b"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Heartbeat(ctx, "billing", "node-b", tokB)
	if err != nil || b.State != client.StateFollower || b.Position != 1 || b.Leader == nil || b.Leader.ID != "node-a" {
		t.Fatalf("heartbeat b: %+v, %v", b, err)
	}
	l, err := c.Leader(ctx, "billing")
	if err != nil || l.ID != "node-a" || l.Term != a.Term || string(l.Metadata) != `{"addr":"10.0.0.7:8080"}` {
		t.Fatalf("leader: %+v, %v", l, err)
	}
	if err := c.Resign(ctx, "billing", "node-a", tokA); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Candidates(ctx, "billing")
	if err != nil || len(cs.Candidates) != 1 || cs.Candidates[0].ID != "node-b" || cs.Candidates[0].State != client.StateLeader || cs.Term <= a.Term {
		t.Fatalf("candidates: %+v, %v", cs, err)
	}
	e, err := c.Election(ctx, "billing")
	if err != nil || e.Leader == nil || e.Leader.ID != "node-b" || e.Candidates != 1 || e.Settings.ErrorCooldown == 0 {
		t.Fatalf("election: %+v, %v", e, err)
	}
	if es, err := c.Elections(ctx); err != nil || len(es) != 1 || es[0].Name != "billing" || es[0].Leader == nil || es[0].Leader.ID != "node-b" {
		t.Fatalf("elections: %+v, %v", es, err)
	}
	if st, err := c.Candidate(ctx, "billing", "node-b"); err != nil || st.State != client.StateLeader || st.Term != cs.Term {
		t.Fatalf("candidate node-b: %+v, %v", st, err)
	}
	if _, err := c.Candidate(ctx, "billing", "node-a"); !errors.Is(err, client.ErrCandidateNotFound) {
		t.Fatalf("candidate node-a after it resigned: %v, want ErrCandidateNotFound", err)
	}
	st, err := c.ReportError(ctx, "billing", "node-b", tokB, "begin command failed")
	if err != nil || st.State != client.StateError || st.Position != -1 || st.CooldownUntil.IsZero() {
		t.Fatalf("report error: %+v, %v", st, err)
	}
	var p *client.Problem
	if err := c.DeleteElection(ctx, "billing"); !errors.As(err, &p) || p.Status != 409 {
		t.Fatalf("deleting an election with a candidate in cooldown: %v, want a 409 problem", err)
	}
	if err := c.Resign(ctx, "billing", "node-b", tokB); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteElection(ctx, "billing"); err != nil {
		t.Fatalf("deleting the empty election: %v", err)
	}
	if _, err := c.Election(ctx, "billing"); !errors.Is(err, client.ErrElectionNotFound) {
		t.Fatalf("reading a deleted election: %v, want ErrElectionNotFound", err)
	}
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	srv := newGateway(t)
	ctx := context.Background()
	c := client.New(srv.URL)
	_, tok, err := c.Campaign(ctx, "e", client.CampaignRequest{ID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, _, errExists := c.Campaign(ctx, "e", client.CampaignRequest{ID: "a"})
	_, _, errInvalid := c.Campaign(ctx, "e", client.CampaignRequest{ID: "a", TTL: 500 * time.Hour})
	_, errMismatch := c.Heartbeat(ctx, "e", "a", "not-the-token")
	_, errGone := c.Heartbeat(ctx, "e", "nobody", tok)
	errMissing := c.Resign(ctx, "e", "a", "")
	_, errNoElection := c.Candidates(ctx, "nowhere")
	_, errNoLeader := c.Leader(ctx, "nowhere")
	if err := c.Resign(ctx, "e", "a", tok); err != nil {
		t.Fatal(err)
	}
	_, errNoLeaderNow := c.Leader(ctx, "e")
	_, errBadURL := client.New("not a url").Leader(ctx, "e")

	tests := []struct {
		name     string
		err      error
		sentinel error
		slug     string
	}{
		{"exists", errExists, client.ErrCandidateExists, "candidate-exists"},
		{"invalid ttl", errInvalid, client.ErrInvalidRequest, "invalid-request"},
		{"token mismatch", errMismatch, client.ErrTokenMismatch, "candidate-token-mismatch"},
		{"unknown candidate", errGone, client.ErrCandidateNotFound, "candidate-not-found"},
		{"token missing", errMissing, client.ErrCandidateTokenMissing, "candidate-token-missing"},
		{"unknown election", errNoElection, client.ErrElectionNotFound, "election-not-found"},
		{"no leader", errNoLeaderNow, client.ErrNoLeader, "no-leader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.sentinel) {
				t.Fatalf("%v is not %v", tt.err, tt.sentinel)
			}
			var p *client.Problem
			if !errors.As(tt.err, &p) || p.Slug() != tt.slug || p.Status < 400 || p.Detail == "" {
				t.Fatalf("problem %+v, want slug %s", p, tt.slug)
			}
			if errors.Is(tt.err, client.ErrUnavailable) {
				t.Errorf("%v matches ErrUnavailable", tt.err)
			}
		})
	}
	if errNoLeader == nil {
		t.Error("leader of an election that does not exist: no error")
	}
	if errBadURL == nil {
		t.Error("a client of a bad URL did not fail")
	}
	var p *client.Problem
	if errors.As(errInvalid, &p) && string(p.Ext["field"]) != `"ttl"` {
		t.Errorf("invalid-request names field %s, want ttl", p.Ext["field"])
	}
}

// TestRevokedCandidacyMatchesBothSentinels: a candidate-not-found problem
// with "revoked" (the gateway's backend ended the candidacy before its TTL)
// is ErrCandidacyRevoked and ErrCandidateNotFound; one without is only the
// latter.
func TestRevokedCandidacyMatchesBothSentinels(t *testing.T) {
	for _, tt := range []struct {
		name    string
		body    string
		revoked bool
	}{
		{"revoked", `{"type":"urn:elector:problem:candidate-not-found","title":"Candidate not found","status":404,"detail":"ended early",` +
			`"revoked":{"at":"2026-11-22T10:00:01.5Z","expires_at":"2026-11-22T10:00:05.5Z"}}`, true},
		{"expired", `{"type":"urn:elector:problem:candidate-not-found","title":"Candidate not found","status":404,"detail":"gone"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			_, err := client.New(srv.URL).Heartbeat(context.Background(), "e", "a", "tok")
			if !errors.Is(err, client.ErrCandidateNotFound) || errors.Is(err, client.ErrCandidacyRevoked) != tt.revoked {
				t.Fatalf("%v: ErrCandidateNotFound %v, ErrCandidacyRevoked %v; want true, %v", err,
					errors.Is(err, client.ErrCandidateNotFound), errors.Is(err, client.ErrCandidacyRevoked), tt.revoked)
			}
		})
	}
}
