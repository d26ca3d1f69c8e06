package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/testnet"
)

// scenario is one behaviour every client shows, written once.
type scenario struct {
	name string
	run  func(t *testing.T, s *setup)
}

// scenarios are what every client's driver is run through. Each runs in
// an election of its own; those that pause or fault a gateway have a
// gateway or a proxy of their own.
var scenarios = []scenario{
	// Leadership.
	{"first_candidate_leads", firstCandidateLeads},
	{"resign_on_close_hands_over", resignOnCloseHandsOver},
	{"report_error_hands_over", reportErrorHandsOver},
	{"transfer_hands_over", transferHandsOver},
	// Sessions (scenarios_session_test.go).
	{"session_renews_and_closes", sessionRenewsAndCloses},
	{"kept_session_leads_until_closed", keptSessionLeadsUntilClosed},
	{"kept_session_steps_down_in_time", keptSessionStepsDownInTime},
	// Faults (scenarios_faults_test.go).
	{"paused_gateway_ends_the_signal_before_ttl_minus_margin", pausedGatewayEndsTheSignal},
	{"dead_first_gateway_fails_over", deadFirstGatewayFailsOver},
	{"retry_after_429_is_honoured", retryAfterIsHonoured(fault{status: 429, retryAfter: 1})},
	{"retry_after_503_date_is_honoured", retryAfterIsHonoured(fault{status: 503, retryAfter: 1, date: true})},
	{"expired_candidacy_campaigns_again", expiredCandidacyCampaignsAgain},
	// Streams and webhooks (scenarios_streams_test.go).
	{"watch_resumes_without_gap_or_duplicate", watchResumes},
	{"observe_resumes_after_a_cut", observeResumes},
	{"webhook_verification", webhookVerification},
	{"problems_are_typed", problemsAreTyped},
}

// ttl is the TTL of the scenarios' candidates: short, so that expiries
// come soon, and long enough for a busy machine.
const ttl = 3 * time.Second

// The first candidate leads with a term; the second follows, and the
// gateway names the first as leader.
func firstCandidateLeads(t *testing.T, s *setup) {
	p := s.start(t)
	gws := []string{s.gateway.URL}
	s.candidate(t, p, "a", gws, ttl)
	a := p.await("a leading", is("leading", "a"))
	if a.Term == 0 {
		t.Fatalf("a leads with term 0: %v", a)
	}
	s.candidate(t, p, "b", gws, ttl)
	p.await("b campaigned", is("campaigned", "b"))
	var res json.RawMessage
	p.must(map[string]any{"cmd": "call", "op": "leader", "gateways": gws, "args": map[string]any{"election": s.election}}, &res)
	var l struct {
		ID   string `json:"id"`
		Term uint64 `json:"term"`
	}
	if err := json.Unmarshal(res, &l); err != nil || l.ID != "a" || l.Term != a.Term {
		t.Fatalf("the leader call answered %s (%v); want a with term %d", res, err, a.Term)
	}
	if n := count(p.Reports(), is("leading", "b")); n > 0 {
		t.Fatalf("b reported leading while a leads:\n%s", p.dump())
	}
}

// Closing a leader resigns it: the gateway ends its leadership as
// resigned (not expired) and the follower leads with the next term, after
// the old leader's signal ended.
func resignOnCloseHandsOver(t *testing.T, s *setup) {
	handsOver(t, s, "resigned", func(p *proc) {
		p.must(map[string]any{"cmd": "close", "name": "a"}, nil)
	})
}

// A leader that reports an error gives up its leadership: the gateway
// ends it with reason error and the follower leads.
func reportErrorHandsOver(t *testing.T, s *setup) {
	handsOver(t, s, "error", func(p *proc) {
		p.must(map[string]any{"cmd": "report_error", "name": "a", "reason": "the leader's work failed to start"}, nil)
	})
}

// A transfer to the follower is handed over: the leader's signal ends
// (reason transferred) before the target leads with a higher term.
func transferHandsOver(t *testing.T, s *setup) {
	handsOver(t, s, "transferred", func(*proc) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if _, err := s.direct().Transfer(ctx, s.election, "b", ""); err != nil {
			t.Fatalf("transfer to b: %v", err)
		}
	})
}

// handsOver makes a lead and b follow, ends a's leadership with end, and
// checks that a stopped for reason, that the gateway ended a's leadership
// for the same reason, and that b then led with a higher term.
func handsOver(t *testing.T, s *setup, reason string, end func(*proc)) {
	t.Helper()
	events := watchElection(t, s.gateway.URL, s.election)
	p := s.start(t)
	gws := []string{s.gateway.URL}
	s.candidate(t, p, "a", gws, ttl)
	a := p.await("a leading", is("leading", "a"))
	s.candidate(t, p, "b", gws, ttl)
	p.await("b campaigned", is("campaigned", "b"))
	end(p)
	stopped := p.await("a stopped", is("stopped", "a"))
	if stopped.Reason != reason || stopped.Term != a.Term {
		t.Errorf("a stopped %v; want term %d, reason %q", stopped, a.Term, reason)
	}
	b := p.await("b leading after a", leadingAfter("b", a.Term))
	if b.AtMS < stopped.AtMS {
		t.Errorf("b led (%v) before a's signal ended (%v)", b, stopped)
	}
	if ev := events.await(t, "leader.end of a", leaderEnd("a")); ev.Data.Reason != reason {
		t.Errorf("the gateway ended a's leadership with reason %q, want %q", ev.Data.Reason, reason)
	}
}

// A candidate whose first gateway is dead (connection refused) campaigns
// through the second and leads.
func deadFirstGatewayFailsOver(t *testing.T, s *setup) {
	// Below the ephemeral range: no ":0" listener of a test running
	// meanwhile is given the port while the candidate dials it.
	dead := "http://" + testnet.FreeAddr(t)
	p := s.start(t)
	s.candidate(t, p, "a", []string{dead, s.gateway.URL}, ttl)
	p.await("a leading through the second gateway", is("leading", "a"))
}

// Problems come back typed: each gateway problem is raised as the
// client's error of that problem type, named by class.
func problemsAreTyped(t *testing.T, s *setup) {
	p := s.start(t)
	gws := []string{s.gateway.URL}
	call := func(op string, args map[string]any, token string) (json.RawMessage, *replyError) {
		if _, ok := args["election"]; !ok {
			args["election"] = s.election
		}
		return p.do(map[string]any{"cmd": "call", "op": op, "gateways": gws, "args": args, "token": token})
	}
	res, rerr := call("campaign", map[string]any{"id": "a", "ttl": "1m"}, "")
	if rerr != nil {
		t.Fatal(rerr)
	}
	var a struct {
		Token string `json:"token"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(res, &a); err != nil || a.Token == "" || a.State != "leader" {
		t.Fatalf("campaign answered %s (%v); want a leader with a token", res, err)
	}
	tests := []struct {
		name, op string
		args     map[string]any
		token    string
		slug     string
		status   int
		class    string // what the class names, letters only, any case
	}{
		{"heartbeat with a wrong token", "heartbeat", map[string]any{"id": "a"}, "not-the-token", "candidate-token-mismatch", 403, "tokenmismatch"},
		{"heartbeat of nobody", "heartbeat", map[string]any{"id": "nobody"}, "x", "candidate-not-found", 404, "candidatenotfound"},
		{"campaign of a taken id", "campaign", map[string]any{"id": "a"}, "", "candidate-exists", 409, "candidateexists"},
		{"campaign with a bad id", "campaign", map[string]any{"id": "not valid!"}, "", "invalid-request", 400, "invalidrequest"},
		{"leader of no election", "leader", map[string]any{"election": s.election + "-none"}, "", "election-not-found", 404, "electionnotfound"},
	}
	for _, tt := range tests {
		_, err := call(tt.op, tt.args, tt.token)
		if err == nil || err.Kind != "problem" || err.Type != client.ProblemTypePrefix+tt.slug || err.Status != tt.status || !names(err.Class, tt.class) {
			t.Errorf("%s: %v; want problem %s%s (%d) raised as the client's %s error", tt.name, err, client.ProblemTypePrefix, tt.slug, tt.status, tt.class)
		}
	}
	if _, err := call("resign", map[string]any{"id": "a"}, a.Token); err != nil {
		t.Fatal(err)
	}
	_, err := call("leader", map[string]any{}, "")
	if err == nil || err.Type != client.ProblemTypePrefix+"no-leader" || !names(err.Class, "noleader") {
		t.Errorf("leader after a resigned: %v; want problem no-leader raised as the client's no-leader error", err)
	}
}

// names reports whether class, in letters only and any case, contains
// want: ErrTokenMismatch, TokenMismatchError and CandidateTokenMismatch
// all name "tokenmismatch".
func names(class, want string) bool {
	letters := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, class)
	return strings.Contains(letters, want)
}
