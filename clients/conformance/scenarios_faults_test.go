package conformance

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/electorhq/elector/client"
)

// The step-down rule: a leader whose gateway stops answering (SIGSTOP,
// past the TTL) ends its leadership signal before TTL − margin has passed
// since its last successful heartbeat. The pause is later than that
// heartbeat (every heartbeat answered before it was sent before it), so
// the signal must end less than TTL − margin after the pause, with the
// margin the client itself reports. A proxy in front of the gateway shows
// the suite the heartbeats, so that the pause comes a sixth of the TTL
// after one was answered, never on its heels.
func pausedGatewayEndsTheSignal(t *testing.T, s *setup) {
	gw := startGateway(t, s.elector)
	proxy := newFaultProxy(t, gw.URL)
	p := s.start(t)
	margin := s.candidate(t, p, "a", []string{proxy.URL}, ttl)
	a := p.await("a leading", is("leading", "a"))

	// Place the pause: a sixth of the TTL after a heartbeat was answered,
	// with no request of the candidacy since.
	var last proxied
	for {
		reqs := proxy.await(t, "a heartbeat answered after a began leading", func(reqs []proxied) bool {
			return lastHeartbeat(reqs, a.At()) != nil
		})
		last = *lastHeartbeat(reqs, a.At())
		time.Sleep(time.Until(last.Answered.Add(ttl / 6)))
		if !slices.ContainsFunc(proxy.Requests(), func(r proxied) bool { return r.Arrived.After(last.Arrived) }) {
			break
		}
	}
	paused := time.Now()
	gw.Pause(t)
	stopped := p.await("a stopped after its gateway was paused", is("stopped", "a"))
	gw.Resume()

	limit := ttl - margin
	after := stopped.At().Sub(paused)
	line := fmt.Sprintf("%s: TTL %s, margin %s: stopped %s after the pause (reason %s), %s before TTL − margin; "+
		"the last successful heartbeat reached the proxy %s before the pause and %s before the stop",
		s.driver.name, ttl, ms(margin), ms(after), stopped.Reason, ms(limit-after), ms(paused.Sub(last.Arrived)), ms(stopped.At().Sub(last.Arrived)))
	t.Log(line)
	s.measure(line)
	if stopped.Reason != client.ReasonHeartbeatTimeout || stopped.Term != a.Term {
		t.Errorf("a stopped %v; want term %d, reason %s", stopped, a.Term, client.ReasonHeartbeatTimeout)
	}
	if after <= 0 || after >= limit {
		t.Errorf("a's signal ended %s after the pause; want within TTL − margin = %s of it (and not before it)", ms(after), ms(limit))
	}
}

// lastHeartbeat is the last heartbeat answered 200 that arrived after
// since, or nil.
func lastHeartbeat(reqs []proxied, since time.Time) *proxied {
	for i := len(reqs) - 1; i >= 0; i-- {
		r := reqs[i]
		if r.Kind == "heartbeat" && r.Status == http.StatusOK && r.Arrived.After(since) {
			return &reqs[i]
		}
	}
	return nil
}

// retryAfterIsHonoured returns a scenario in which the gateway (the
// suite's proxy) answers a candidate's first two campaigns with f: the
// candidate must not send its next request before the Retry-After has
// passed, and then lead. A candidate without a candidacy has no place in
// line to keep, so nothing excuses coming back early.
func retryAfterIsHonoured(f fault) func(t *testing.T, s *setup) {
	return func(t *testing.T, s *setup) {
		proxy := newFaultProxy(t, s.gateway.URL)
		proxy.Fail(2, f)
		p := s.start(t)
		s.candidate(t, p, "a", []string{proxy.URL}, ttl)
		p.await("a leading after its refused campaigns", is("leading", "a"))
		reqs := proxy.Requests()
		if len(reqs) < 3 || reqs[0].Status != f.status || reqs[1].Status != f.status || reqs[2].Kind != "campaign" || reqs[2].Status != http.StatusCreated {
			t.Fatalf("the candidacy's requests:\n%s\nwant two campaigns answered %d, then one answered 201", describe(reqs), f.status)
		}
		for i := range 2 {
			early := reqs[i].RetryAfter.Sub(reqs[i+1].Arrived)
			t.Logf("%d with Retry-After answered at %s pointing at %s; next request %s",
				f.status, reqs[i].Answered.Format("15:04:05.000"), reqs[i].RetryAfter.Format("15:04:05.000"), reqs[i+1].Arrived.Format("15:04:05.000"))
			if early > 0 {
				t.Errorf("request %d came %s before the Retry-After of the answer to request %d had passed", i+2, ms(early), i+1)
			}
		}
	}
}

// A leader whose heartbeats are refused (503) past its TTL stops leading
// before the gateway expires it; once heartbeats pass again, the gateway
// answers that the candidacy is gone, and the candidate campaigns again
// and leads with a higher term.
func expiredCandidacyCampaignsAgain(t *testing.T, s *setup) {
	events := watchElection(t, s.gateway.URL, s.election)
	proxy := newFaultProxy(t, s.gateway.URL)
	p := s.start(t)
	s.candidate(t, p, "a", []string{proxy.URL}, ttl)
	a := p.await("a leading", is("leading", "a"))
	proxy.Refuse(true)
	expired := events.await(t, "leader.end of a", leaderEnd("a"))
	proxy.Refuse(false)
	if expired.Data.Reason != "expired" {
		t.Fatalf("a's leadership ended with reason %q, want expired", expired.Data.Reason)
	}
	stopped := p.await("a stopped", is("stopped", "a"))
	if stopped.Reason != client.ReasonHeartbeatTimeout || !stopped.At().Before(expired.Timestamp) {
		t.Errorf("a stopped %v; want reason %s before the gateway expired it at %s",
			stopped, client.ReasonHeartbeatTimeout, expired.Timestamp.Format("15:04:05.000"))
	}
	again := p.await("a leading again", leadingAfter("a", a.Term))
	if n := count(p.Reports(), is("campaigned", "a")); n < 2 {
		t.Errorf("a campaigned %d times; want a campaign again after the expiry (leading again: %v)", n, again)
	}
}
