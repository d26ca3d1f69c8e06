package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/webhooks"
)

// cutRounds is how many times the streams scenarios cut the driver's
// connection while events happen.
const cutRounds = 3

// churn makes an election change leaders while a driver follows it
// through proxy: in each round a new candidate joins, the driver's
// stream is cut (after seen, if given, says the driver saw the join),
// and the leader resigns at once, handing over to the next in line, so
// that those events happen while the driver reconnects. The first leader
// is seed, with token. It returns the last leader's id.
func churn(t *testing.T, s *setup, proxy *faultProxy, events *eventLog, token string, seen func(joined client.Event)) string {
	t.Helper()
	ctx := context.Background()
	c := s.direct()
	leader := "seed"
	for round := range cutRounds {
		id := fmt.Sprintf("next-%d", round)
		_, next, err := c.Campaign(ctx, s.election, client.CampaignRequest{ID: id, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		joined := events.await(t, "candidate.joined of "+id, func(ev client.Event) bool {
			return ev.Type == client.EventCandidateJoined && ev.Data.Candidate != nil && ev.Data.Candidate.ID == id
		})
		if seen != nil {
			seen(joined)
		}
		proxy.CutStreams(t)
		if err := c.Resign(ctx, s.election, leader, token); err != nil {
			t.Fatal(err)
		}
		leader, token = id, next
	}
	t.Cleanup(func() { _ = c.Resign(context.Background(), s.election, leader, token) })
	return leader
}

// seed makes the candidate "seed" lead the scenario's election, before
// anything follows it, and returns its token.
func seed(t *testing.T, s *setup) string {
	t.Helper()
	_, token, err := s.direct().Campaign(context.Background(), s.election, client.CampaignRequest{ID: "seed", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// A watch resumes after its connection is cut, while events happen, with
// no event missing and none twice: the ids it reports are those the
// gateway's own stream had, in the same order, and no reset comes after
// the first.
func watchResumes(t *testing.T, s *setup) {
	token := seed(t, s)
	events := watchElection(t, s.gateway.URL, s.election)
	proxy := newFaultProxy(t, s.gateway.URL)
	p := s.start(t)
	p.must(map[string]any{"cmd": "watch", "name": "w", "gateways": []string{proxy.URL}, "election": s.election}, nil)
	p.await("w's first event, a reset", func(r report) bool { return r.Event == "observed" && r.Name == "w" && r.Type == client.EventReset })
	observed := func(id string) func(report) bool {
		return func(r report) bool { return r.Event == "observed" && r.Name == "w" && r.ID == id }
	}
	churn(t, s, proxy, events, token, func(joined client.Event) {
		p.await("w observed "+joined.ID, observed(joined.ID))
	})
	// A last candidate joins: once the gateway's own stream has its
	// event, it has every event before it, those of the last resignation
	// included, and so the list below is whole.
	ctx := context.Background()
	_, markToken, err := s.direct().Campaign(ctx, s.election, client.CampaignRequest{ID: "mark", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.direct().Resign(context.Background(), s.election, "mark", markToken) })
	events.await(t, "candidate.joined of mark", func(ev client.Event) bool {
		return ev.Type == client.EventCandidateJoined && ev.Data.Candidate != nil && ev.Data.Candidate.ID == "mark"
	})
	var want []string
	for _, ev := range events.Events() {
		if ev.Type != client.EventReset {
			want = append(want, ev.ID)
		}
	}
	p.await("w observed the last event, "+want[len(want)-1], observed(want[len(want)-1]))
	var got []string
	for i, r := range observedBy(p, "w") {
		switch {
		case r.Type == client.EventReset && i > 0:
			t.Errorf("w reported a reset after its first event: it lost its place instead of resuming")
		case r.Type != client.EventReset:
			got = append(got, r.ID)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("w reported the events\n\t%s\nthe gateway's stream had\n\t%s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// An observe resumes after its connection is cut: it reports every
// leader in turn (none missing, none twice in a row), ending with the
// current one.
func observeResumes(t *testing.T, s *setup) {
	token := seed(t, s)
	events := watchElection(t, s.gateway.URL, s.election)
	proxy := newFaultProxy(t, s.gateway.URL)
	p := s.start(t)
	p.must(map[string]any{"cmd": "observe", "name": "o", "gateways": []string{proxy.URL}, "election": s.election}, nil)
	p.await("o's first value, seed", func(r report) bool { return r.Event == "leader" && r.Name == "o" && r.Leader == "seed" })
	last := churn(t, s, proxy, events, token, nil)
	events.await(t, "leader.begin of "+last, func(ev client.Event) bool {
		return ev.Type == client.EventLeaderBegin && ev.Data.Candidate != nil && ev.Data.Candidate.ID == last
	})
	begins := []string{"seed"}
	for _, ev := range events.Events() {
		if ev.Type == client.EventLeaderBegin {
			begins = append(begins, ev.Data.Candidate.ID+"@"+strconv.FormatUint(ev.Data.Term, 10))
		}
	}
	p.await("o's value "+last, func(r report) bool { return r.Event == "leader" && r.Name == "o" && r.Leader == last })
	var leaders []string
	var prev *report
	for _, r := range p.Reports() {
		if r.Event != "leader" || r.Name != "o" {
			continue
		}
		if prev != nil && prev.Leader == r.Leader && prev.Term == r.Term {
			t.Errorf("o reported %q (term %d) twice in a row", r.Leader, r.Term)
		}
		if r.Leader != "" {
			v := r.Leader + "@" + strconv.FormatUint(r.Term, 10)
			if len(leaders) == 0 {
				v = r.Leader // the seed's term is not in the stream
			}
			leaders = append(leaders, v)
		}
		prev = &r
	}
	if strings.Join(leaders, " ") != strings.Join(begins, " ") {
		t.Errorf("o reported the leaders\n\t%s\nthe gateway's stream had\n\t%s", strings.Join(leaders, " "), strings.Join(begins, " "))
	}
}

// The client's webhook verification accepts a delivery the gateway made
// to the suite's receiver (also with a second signature beside its own,
// as during a secret's rotation), and refuses it tampered with.
func webhookVerification(t *testing.T, s *setup) {
	hook := s.webhook
	p := s.start(t)
	resign := func(h map[string]string, ts time.Time) {
		sig, err := webhooks.Sign([]string{hook.Secret}, h["webhook-id"], ts, []byte(hook.Body))
		if err != nil {
			t.Fatal(err)
		}
		h["webhook-timestamp"], h["webhook-signature"] = strconv.FormatInt(ts.Unix(), 10), sig
	}
	tests := []struct {
		name   string
		secret string
		edit   func(h map[string]string, body *string)
		valid  bool
	}{
		{"the delivery", hook.Secret, func(map[string]string, *string) {}, true},
		{"beside another signature", hook.Secret, func(h map[string]string, _ *string) {
			h["webhook-signature"] = "v1,c2lnbmVkIHdpdGggYW4gb2xkIHNlY3JldA== " + h["webhook-signature"]
		}, true},
		{"body changed", hook.Secret, func(_ map[string]string, b *string) {
			*b = strings.Replace(*b, client.EventLeaderBegin, client.EventLeaderEnd, 1)
		}, false},
		{"signature changed", hook.Secret, func(h map[string]string, _ *string) {
			// A character in the middle: the last ones may hold padding
			// bits a lenient base64 decoder ignores.
			sig := []byte(h["webhook-signature"])
			i := len("v1,") + 10
			sig[i] = map[bool]byte{true: 'B', false: 'A'}[sig[i] == 'A']
			h["webhook-signature"] = string(sig)
		}, false},
		{"webhook-id changed", hook.Secret, func(h map[string]string, _ *string) { h["webhook-id"] += "0" }, false},
		{"another secret", webhooks.NewSecret(), func(map[string]string, *string) {}, false},
		{"signed a day earlier (a replay)", hook.Secret, func(h map[string]string, _ *string) {
			resign(h, time.Now().Add(-24*time.Hour))
		}, false},
		{"no signature", hook.Secret, func(h map[string]string, _ *string) { delete(h, "webhook-signature") }, false},
	}
	for _, tt := range tests {
		h := map[string]string{}
		for k, v := range hook.Headers {
			h[k] = v
		}
		body := hook.Body
		tt.edit(h, &body)
		var res struct {
			Valid   bool            `json:"valid"`
			Event   json.RawMessage `json:"event"`
			Message string          `json:"message"`
		}
		p.must(map[string]any{"cmd": "verify_webhook", "secret": tt.secret, "headers": h, "body": body}, &res)
		if res.Valid != tt.valid {
			t.Errorf("%s: valid %v (%s), want %v", tt.name, res.Valid, res.Message, tt.valid)
			continue
		}
		if !tt.valid {
			continue
		}
		var ev struct {
			Type string
			Data struct{ Election string }
		}
		if err := json.Unmarshal(res.Event, &ev); err != nil || ev.Type != client.EventLeaderBegin || ev.Data.Election != hook.Election {
			t.Errorf("%s: event %s (%v); want the leader.begin of %s", tt.name, res.Event, err, hook.Election)
		}
	}
}

// observedBy is the events the watch name reported, in order.
func observedBy(p *proc, name string) []report {
	var out []report
	for _, r := range p.Reports() {
		if r.Event == "observed" && r.Name == name {
			out = append(out, r)
		}
	}
	return out
}
