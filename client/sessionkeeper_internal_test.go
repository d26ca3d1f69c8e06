package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSessionKeeperLeadDeadlines: a Lead's step-down deadline is the last
// renewal's until an answer names its candidacy, then the newest answer's
// (lowered too, for a leader asked to hand over, which a heartbeat does
// not renew); an answer that does not show it leading with its term ends
// it, but for one to a heartbeat sent before the campaign that does not
// name it at all.
func TestSessionKeeperLeadDeadlines(t *testing.T) {
	const ttl = 10 * time.Second
	margin := StepDownMargin(ttl)
	base := time.Now().Add(time.Hour) // far enough that no timer fires in the test
	gw := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	answer := func(cs ...SessionCandidate) Session {
		return Session{ID: "ses_x", TTL: Duration(ttl), ExpiresAt: Time{gw.Add(ttl)}, Candidates: cs}
	}
	leader := func(term uint64, expires time.Duration) SessionCandidate {
		return SessionCandidate{Election: "e", ID: "a", State: StateLeader, Term: term, ExpiresAt: Time{gw.Add(expires)}}
	}
	type step struct {
		s    Session
		sent time.Duration // after base
	}
	tests := []struct {
		name         string
		last         step // the keeper's last answer when Lead is called
		since        time.Duration
		then         []step
		wantDeadline time.Duration // after base, while it lives
		wantEnded    bool
	}{
		{name: "BeforeAnyAnswer", last: step{answer(), 0}, since: time.Second, wantDeadline: ttl - margin},
		{name: "RenewedLater", last: step{answer(), 0}, since: time.Second,
			then: []step{{answer(leader(7, ttl)), 4 * time.Second}}, wantDeadline: 4*time.Second + ttl - margin},
		{name: "NamedInTheLastAnswer", last: step{answer(leader(7, ttl)), 2 * time.Second}, since: time.Second,
			wantDeadline: 2*time.Second + ttl - margin},
		{name: "AskedToHandOver", last: step{answer(), 0}, since: time.Second,
			then:         []step{{answer(leader(7, ttl)), 2 * time.Second}, {answer(leader(7, 4*time.Second)), 5 * time.Second}},
			wantDeadline: 5*time.Second + 4*time.Second - margin},
		{name: "AnsweredBeforeTheCampaign", last: step{answer(), 0}, since: time.Second,
			then: []step{{answer(), 500 * time.Millisecond}}, wantDeadline: ttl - margin},
		{name: "GoneAfterTheCampaign", last: step{answer(), 0}, since: time.Second,
			then: []step{{answer(), 2 * time.Second}}, wantEnded: true},
		{name: "AnotherTerm", last: step{answer(), 0}, since: time.Second,
			then: []step{{answer(leader(8, ttl)), 500 * time.Millisecond}}, wantEnded: true},
		{name: "Follower", last: step{answer(), 0}, since: time.Second,
			then: []step{{answer(SessionCandidate{Election: "e", ID: "a", State: StateFollower, Term: 7}), 2 * time.Second}}, wantEnded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := &SessionKeeper{ttl: ttl, last: tt.last.s, sent: base.Add(tt.last.sent), changed: make(chan struct{}), leads: map[*sessionLead]struct{}{}}
			ctx, cancel := k.Lead(context.Background(), "e", 7, base.Add(tt.since))
			defer cancel()
			for _, st := range tt.then {
				k.answered(st.s, base.Add(st.sent))
			}
			k.mu.Lock()
			var l *sessionLead
			for x := range k.leads {
				l = x
			}
			k.mu.Unlock()
			switch ended := context.Cause(ctx) != nil; {
			case ended != tt.wantEnded:
				t.Fatalf("ended: %v (%v); want %v", ended, context.Cause(ctx), tt.wantEnded)
			case ended && !errors.Is(context.Cause(ctx), ErrLeadershipLost):
				t.Fatalf("ended with %v; want ErrLeadershipLost", context.Cause(ctx))
			case !ended && !l.deadline.Equal(base.Add(tt.wantDeadline)):
				t.Fatalf("deadline base+%v; want base+%v", l.deadline.Sub(base), tt.wantDeadline)
			}
		})
	}
}
