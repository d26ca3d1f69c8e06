package webhooks

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// campaignWithWebhook campaigns id with its own endpoint, as the API does.
func (e *env) campaignWithWebhook(s *Service, election, id, url string, beginTimeout time.Duration) (token, secret string) {
	e.t.Helper()
	ctx := context.Background()
	p, err := s.PrepareCandidate(ctx, election, CandidateWebhook{URL: url, BeginTimeout: beginTimeout})
	if err != nil {
		e.t.Fatalf("prepare %s: %v", id, err)
	}
	_, tok, err := e.gw.Campaign(ctx, election, gateway.CampaignRequest{ID: id, TTL: 5 * time.Second})
	if err != nil {
		e.t.Fatalf("campaign %s: %v", id, err)
	}
	secret, err = p.Register(ctx, id, tok)
	if err != nil {
		e.t.Fatalf("register %s: %v", id, err)
	}
	e.keepAlive(election, id, tok)
	return tok, secret
}

func TestUnacknowledgedBeginPutsLeaderInError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cooldown := 2 * time.Second
	if _, err := e.gw.Configure(ctx, "deadline", gateway.SettingsPatch{ErrorCooldown: &cooldown}); err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return http.StatusInternalServerError })
	s, _ := e.service(testConfig())
	tok, _ := e.campaignWithWebhook(s, "deadline", "a", rc.srv.URL, time.Second)
	e.campaign("deadline", "b")

	eventually.True(t, 5*time.Second, "a put in error after its begin went unacknowledged", func() bool {
		el, _ := e.gw.Election(ctx, "deadline")
		st, _ := gateway.StatusOf(el, "a")
		return st.Candidate.State == gateway.StateError
	})
	// b leads once a's promise has lapsed: up to a's TTL after the verdict.
	eventually.True(t, 15*time.Second, "b leads after a's begin went unacknowledged", func() bool {
		l, _, err := e.gw.Leader(ctx, "deadline")
		return err == nil && l.ID == "b"
	})
	begins := 0
	for _, r := range rc.requests() {
		if r.payload(t).Type == gateway.EventLeaderBegin {
			begins++
		}
	}
	if begins == 0 {
		t.Fatal("a's endpoint never got its leader.begin")
	}
	eventually.True(t, 5*time.Second, "a back in line after its cooldown", func() bool {
		el, _ := e.gw.Election(ctx, "deadline")
		st, ok := gateway.StatusOf(el, "a")
		return ok && st.Candidate.State == gateway.StateFollower && st.Position == 1
	})
	ds, err := s.CandidateDeliveries(ctx, "deadline", "a", tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	var begin *Delivery
	for i := range ds {
		if ds[i].EventType == gateway.EventLeaderBegin {
			begin = &ds[i]
		}
	}
	if begin == nil || begin.Status != StatusFailed || len(begin.Attempts) == 0 {
		t.Fatalf("begin delivery %+v, want failed with attempts", begin)
	}
	if _, err := s.CandidateDeliveries(ctx, "deadline", "a", "ect_wrong", 0); err == nil {
		t.Fatal("deliveries with a wrong token: no error")
	}
}

func TestAcknowledgedBeginKeepsLeadership(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	tok, secret := e.campaignWithWebhook(s, "acked", "a", rc.srv.URL, 0)
	e.campaign("acked", "b")
	// Once the begin is settled as acknowledged and the worker has moved
	// past it, its deadline no longer applies, however long it is.
	eventually.True(t, 5*time.Second, "a's begin delivery recorded", func() bool {
		ds, err := s.CandidateDeliveries(ctx, "acked", "a", tok, 0)
		return err == nil && len(ds) == 1
	})
	ds, _ := s.CandidateDeliveries(ctx, "acked", "a", tok, 0)
	if ds = s.settled(t, ds[0].Endpoint, 1); ds[0].Status != StatusSucceeded {
		t.Fatalf("begin delivery %+v, want succeeded", ds[0])
	}
	l, _, err := e.gw.Leader(ctx, "acked")
	if err != nil || l.ID != "a" {
		t.Fatalf("leader %+v, %v; want a", l, err)
	}
	r := rc.successes()[0]
	if p := r.payload(t); p.Type != gateway.EventLeaderBegin || p.Data.Candidate.ID != "a" || p.Data.Term != l.Term {
		t.Fatalf("a got %+v, want its leader.begin of term %d", p, l.Term)
	}
	if err := Verify([]string{secret}, r.Header, r.Body, time.Now(), 0); err != nil {
		t.Fatalf("signature: %v", err)
	}
	// Only a's own leader events reach its endpoint: not b's joining.
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("a's endpoint got %d requests, want 1", n)
	}
}

func TestCandidateEndpointGoesAwayWhenTheCandidateLeaves(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	tok, _ := e.campaignWithWebhook(s, "leaving", "a", rc.srv.URL, 0)
	if err := e.gw.Resign(ctx, "leaving", "a", tok); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "begin and end delivered, endpoint removed", func() bool {
		kv := e.gw.KV()
		items, _ := kv.List(ctx, "wh")
		return len(rc.successes()) == 2 && len(items) == 0
	})
	if p := rc.successes()[1].payload(t); p.Type != gateway.EventLeaderEnd || p.Data.Reason != gateway.ReasonResigned {
		t.Fatalf("second delivery %+v, want leader.end resigned", p)
	}
}

// TestLatePickupStillGetsAWholeBeginWindow: when no replica sends a new
// leader's begin in time (here: none runs until well after the deadline),
// the first replica that does gives the receiver a whole window instead of
// failing the leader without a single attempt.
func TestLatePickupStillGetsAWholeBeginWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	rc := newReceiver(t, nil)
	kv := e.gw.KV()
	s := New(e.gw, kv, testConfig())
	p, err := s.PrepareCandidate(ctx, "late", CandidateWebhook{URL: rc.srv.URL, BeginTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := e.gw.Campaign(ctx, "late", gateway.CampaignRequest{ID: "a", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Register(ctx, "a", tok); err != nil {
		t.Fatal(err)
	}
	e.keepAlive("late", "a", tok)
	// The service's clock is 2s ahead: to it, the begin deadline passed
	// with nobody sending.
	s.now = func() time.Time { return time.Now().Add(2 * time.Second) }
	e.run(s)
	eventually.True(t, 5*time.Second, "a's begin delivered", func() bool { return len(rc.successes()) == 1 })
	if l, _, err := e.gw.Leader(ctx, "late"); err != nil || l.ID != "a" {
		t.Fatalf("leader %+v, %v; want a, whose receiver answered 2xx at its first try", l, err)
	}
}
