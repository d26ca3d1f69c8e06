package conformance

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// A session opened through the client campaigns in two elections; its
// heartbeats alone keep both candidacies past their TTL, and closing it
// resigns both (leader.end resigned, not an expiry), after which the
// session is gone: its heartbeat is the client's session-not-found error.
func sessionRenewsAndCloses(t *testing.T, s *setup) {
	p := s.start(t)
	gws := []string{s.gateway.URL}
	elections := []string{s.election, s.election + "-2"}
	events := watchElection(t, s.gateway.URL, elections[0])
	call := func(op string, args map[string]any, token string, out any) {
		t.Helper()
		p.must(map[string]any{"cmd": "call", "op": op, "gateways": gws, "args": args, "token": token}, out)
	}

	var opened struct {
		ID         string            `json:"id"`
		TTL        string            `json:"ttl"`
		Token      string            `json:"token"`
		Candidates []json.RawMessage `json:"candidates"`
	}
	call("open_session", map[string]any{"ttl": ttl.String()}, "", &opened)
	if opened.ID == "" || opened.Token == "" || opened.TTL != ttl.String() || opened.Candidates == nil || len(opened.Candidates) != 0 {
		t.Fatalf("open_session answered %+v; want an id, a token, ttl %s and no candidates", opened, ttl)
	}
	session := map[string]any{"session": opened.ID}
	for _, e := range elections {
		var st struct {
			State string `json:"state"`
			TTL   string `json:"ttl"`
			Token string `json:"token"`
		}
		call("campaign", map[string]any{"election": e, "id": "a", "session": opened.ID}, opened.Token, &st)
		if st.State != "leader" || st.TTL != opened.TTL || st.Token != opened.Token {
			t.Fatalf("campaign in %s in the session: %+v; want a leader with the session's TTL and token", e, st)
		}
	}

	// Heartbeats of the session alone, for longer than its TTL.
	var kept struct {
		Candidates []struct {
			Election  string `json:"election"`
			ID        string `json:"id"`
			ExpiresAt string `json:"expires_at"`
		} `json:"candidates"`
	}
	for end := time.Now().Add(ttl + ttl/2); time.Now().Before(end); time.Sleep(ttl / 3) {
		call("heartbeat_session", session, opened.Token, &kept)
	}
	var got []string
	for _, c := range kept.Candidates {
		if c.ID == "a" && c.ExpiresAt != "" {
			got = append(got, c.Election)
		}
	}
	if !slices.Equal(got, elections) {
		t.Fatalf("heartbeat_session answered candidacies in %v; want a in %v", got, elections)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c := s.direct()
	for _, e := range elections {
		if l, err := c.Leader(ctx, e); err != nil || l.ID != "a" {
			t.Fatalf("leader of %s after %s of session heartbeats: %+v, %v; want a", e, ttl+ttl/2, l, err)
		}
	}

	call("close_session", session, opened.Token, nil)
	for _, e := range elections {
		if cs, err := c.Candidates(ctx, e); err != nil || len(cs.Candidates) != 0 {
			t.Errorf("candidates of %s after the close: %+v, %v; want none", e, cs, err)
		}
	}
	if ev := events.await(t, "leader.end of a", leaderEnd("a")); ev.Data.Reason != "resigned" {
		t.Errorf("the close ended a's leadership with reason %q, want resigned", ev.Data.Reason)
	}
	_, err := p.do(map[string]any{"cmd": "call", "op": "heartbeat_session", "gateways": gws, "args": session, "token": opened.Token})
	if err == nil || err.Type != client.ProblemTypePrefix+"session-not-found" || !names(err.Class, "sessionnotfound") {
		t.Errorf("heartbeat_session after the close: %v; want problem session-not-found raised as the client's session-not-found error", err)
	}
}
