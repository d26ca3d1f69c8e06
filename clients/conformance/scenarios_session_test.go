package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// keeper starts the client's session keeper named name through gateway,
// with the scenario's TTL, and returns the step-down margin it uses.
func (s *setup) keeper(t *testing.T, p *proc, name, gateway string) time.Duration {
	t.Helper()
	var res struct {
		Session  string  `json:"session"`
		Token    string  `json:"token"`
		MarginMS float64 `json:"margin_ms"`
	}
	p.must(map[string]any{"cmd": "keep_session", "name": name, "gateways": []string{gateway}, "ttl_ms": ttl.Milliseconds()}, &res)
	margin := time.Duration(res.MarginMS * float64(time.Millisecond))
	if res.Session == "" || res.Token == "" || margin <= 0 || margin >= ttl {
		t.Fatalf("keep_session answered %+v; want a session, its token and a step-down margin within the TTL of %s", res, ttl)
	}
	return margin
}

// keeperCampaign campaigns candidate id in the scenario's election in the
// session of keeper k, its leadership reported under id, and returns the
// term it leads with.
func (s *setup) keeperCampaign(t *testing.T, p *proc, k, id string) uint64 {
	t.Helper()
	var st struct {
		State string `json:"state"`
		Term  uint64 `json:"term"`
	}
	p.must(map[string]any{"cmd": "keeper_campaign", "name": k, "lead": id, "election": s.election, "candidate": id}, &st)
	if st.State != "leader" || st.Term == 0 {
		t.Fatalf("keeper_campaign of %s answered %+v; want it leading with a term", id, st)
	}
	return st.Term
}

// sessionHeartbeats are the session heartbeats answered 200 that arrived
// after since.
func sessionHeartbeats(reqs []proxied, since time.Time) []proxied {
	var out []proxied
	for _, r := range reqs {
		if r.Kind == "session_heartbeat" && r.Status == http.StatusOK && r.Arrived.After(since) {
			out = append(out, r)
		}
	}
	return out
}

// The client's session keeper heartbeats its session by itself: a
// candidacy campaigned in it leads, with its leadership signal set, for
// twice the TTL and more; closing the keeper ends the signal and resigns
// the candidacy (leader.end resigned, not an expiry).
func keptSessionLeadsUntilClosed(t *testing.T, s *setup) {
	events := watchElection(t, s.gateway.URL, s.election)
	proxy := newFaultProxy(t, s.gateway.URL)
	p := s.start(t)
	s.keeper(t, p, "k", proxy.URL)
	term := s.keeperCampaign(t, p, "k", "a")
	a := p.await("a leading", is("leading", "a"))
	if a.Term != term {
		t.Fatalf("a reported leading %v; want term %d", a, term)
	}
	proxy.await(t, "session heartbeats for twice the TTL after a began leading", func(reqs []proxied) bool {
		beats := sessionHeartbeats(reqs, a.At())
		return len(beats) > 0 && beats[len(beats)-1].Arrived.Sub(a.At()) > 2*ttl
	})
	if n := count(p.Reports(), is("stopped", "a")); n > 0 {
		t.Fatalf("a's signal ended while its session was kept:\n%s", p.dump())
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if l, err := s.direct().Leader(ctx, s.election); err != nil || l.ID != "a" || l.Term != term {
		t.Fatalf("leader after twice the TTL of kept session: %+v, %v; want a with term %d", l, err, term)
	}

	p.must(map[string]any{"cmd": "close", "name": "k"}, nil)
	stopped := p.await("a stopped after the close", is("stopped", "a"))
	ended := events.await(t, "leader.end of a", leaderEnd("a"))
	if ended.Data.Reason != "resigned" {
		t.Errorf("closing the keeper ended a's leadership with reason %q, want resigned", ended.Data.Reason)
	}
	if !stopped.At().Before(ended.Timestamp) {
		t.Errorf("a's signal ended at %s, after the gateway ended its leadership at %s",
			stopped.At().Format("15:04:05.000"), ended.Timestamp.Format("15:04:05.000"))
	}
	if n := count(p.Reports(), is("session_ended", "k")); n > 0 {
		t.Errorf("a keeper closed by the program reported session_ended:\n%s", p.dump())
	}
}

// A kept session whose heartbeats are refused (503) loses its leader to
// the step-down rule: its signal ends before the gateway could expire the
// candidacy, a TTL after the last heartbeat that got through, and before
// the gateway does. The keeper keeps trying; once heartbeats pass again,
// the gateway answers that the session is gone, and the keeper ends,
// reporting the client's session-not-found error.
func keptSessionStepsDownInTime(t *testing.T, s *setup) {
	events := watchElection(t, s.gateway.URL, s.election)
	proxy := newFaultProxy(t, s.gateway.URL)
	p := s.start(t)
	margin := s.keeper(t, p, "k", proxy.URL)
	s.keeperCampaign(t, p, "k", "a")
	a := p.await("a leading", is("leading", "a"))
	proxy.await(t, "a session heartbeat answered after a began leading", func(reqs []proxied) bool {
		return len(sessionHeartbeats(reqs, a.At())) > 0
	})
	proxy.Refuse(true)
	expired := events.await(t, "leader.end of a", leaderEnd("a"))
	stopped := p.await("a stopped", is("stopped", "a"))
	beats := sessionHeartbeats(proxy.Requests(), a.At())
	last := beats[len(beats)-1]
	proxy.Refuse(false)

	line := fmt.Sprintf("%s session keeper: TTL %s, margin %s: stopped %s after the last session heartbeat that got through arrived, the gateway expired the candidacy %s after it",
		s.driver.name, ttl, ms(margin), ms(stopped.At().Sub(last.Arrived)), ms(expired.Timestamp.Sub(last.Arrived)))
	t.Log(line)
	s.measure(line)
	if expired.Data.Reason != "expired" {
		t.Errorf("a's leadership ended with reason %q, want expired", expired.Data.Reason)
	}
	if stopped.Term != a.Term || !stopped.At().Before(expired.Timestamp) || !stopped.At().Before(last.Arrived.Add(ttl)) {
		t.Errorf("a stopped %v; want term %d, before the gateway expired it at %s and within a TTL of the last heartbeat that got through (%s)",
			stopped, a.Term, expired.Timestamp.Format("15:04:05.000"), last.Arrived.Format("15:04:05.000"))
	}
	ended := p.await("k ended", is("session_ended", "k"))
	if ended.Error == nil || ended.Error.Type != client.ProblemTypePrefix+"session-not-found" || !names(ended.Error.Class, "sessionnotfound") {
		t.Errorf("the keeper ended with %+v; want problem session-not-found raised as the client's session-not-found error", ended.Error)
	}
}
