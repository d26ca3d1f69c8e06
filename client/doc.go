// Package client is the Go client of elector, a leader-election gateway.
// A Candidacy campaigns for you and runs your code while you lead:
//
//	cand, err := client.NewCandidacy(client.CandidacyConfig{
//		Gateways: []string{"http://127.0.0.1:8080"},
//		Election: "billing", ID: hostname, TTL: 10 * time.Second,
//		OnStartedLeading: func(ctx context.Context, term uint64) {
//			runBilling(ctx, term) // until ctx ends; pass term to what you guard
//		},
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	err = cand.Run(ctx) // until ctx ends; then it stops leading and resigns
//
// That is the whole program: Run campaigns, heartbeats every TTL/3,
// campaigns again when the candidacy expired, obeys the step-down rule,
// and resigns on the way out so the next candidate leads at once.
//
// # Leading
//
// OnStartedLeading is called, in a goroutine other than Run's, when the
// gateway has confirmed with a heartbeat that this candidate leads. Its
// context is cancelled the moment leadership may be lost: a heartbeat says
// another leads, the candidacy expired, Resign or ReportError was called,
// Run's context ended, or the step-down deadline passed. Do the leader's
// work under that context and stop when it ends. OnStoppedLeading follows,
// after OnStartedLeading has returned; callbacks never overlap and come in
// order.
//
// A follower learns that it leads from the election's event stream, within
// a round trip of the handover, not at its next heartbeat; it still waits
// for a heartbeat's answer before it acts.
//
// The same standings come as values on Candidacy.States (the latest one,
// with the term and the current leader), for programs that prefer a loop
// to callbacks; Candidacy.Standing reads the current one.
//
// # Step-down rule
//
// A leader that has had no successful heartbeat for its TTL minus a safety
// margin (StepDownMargin: the larger of TTL/10 and 500ms) must stop acting
// as leader, whatever it last heard: the gateway may already have handed
// leadership to another candidate. The gateway counts the TTL from when it
// received the last heartbeat, the leader from when it sent it, so the
// leader stops first. A Candidacy obeys the rule: the context of
// OnStartedLeading ends at the deadline at the latest, and its Err looks at
// the clock itself, so a process that was paused past the deadline sees
// the leadership over at its first check. Programs using the plain calls
// (Campaign, Heartbeat) must obey the rule themselves.
//
// # Guarding a resource with the term
//
// Every leadership carries a term, a fencing token that strictly increases
// from one leadership of an election to the next. Pass it to what the
// leader writes to, and have that refuse writes from an older term than
// it has seen: then not even a leader that lost its leadership without
// knowing can do harm. See the fencing example of Candidacy.
//
// # Transfers and priorities
//
// Client.Transfer asks the leader to hand over to a named follower. The
// leader's heartbeats are then refused with ErrTransferPending and no
// longer extend its life; a Candidacy stops leading at once (reason
// ReasonTransferred), waits for its callbacks to return and calls
// Client.Handover, and the target leads with the next term. A candidate
// may campaign with a priority (CandidacyConfig.Priority); with the
// election's preempt setting (Client.Configure) a follower of higher
// priority than the leader takes over the same way. Both need a gateway
// whose backend supports them; others answer ErrNotSupported.
//
// # Failures
//
// A request that fails in transport or with a 5xx answer goes to the next
// of the Gateways at once; the candidate's event stream follows it to the
// gateway that answered. A request that a gateway leaves unanswered until
// its deadline (a stopped replica, a network that drops packets) fails,
// and the next one starts with the next gateway: a hung replica costs one
// request, not every request for as long as it hangs.
// When all fail, or the gateway asks it to slow
// down (429, 503 with Retry-After), the candidacy backs off with jitter:
// from TTL/10 doubling up to TTL/3 while it holds a candidacy, so a short
// outage does not cost it its place in line, and up to MaxRetryDelay while
// it cannot campaign. A leader waits at most half the time left before its
// step-down deadline, so that it tries again before the deadline if the
// gateways answer again in time. ReportError gives the leadership up when the work
// cannot start; the candidacy sits out its ErrorTimeout and campaigns again
// at the back of the line.
//
// # Sessions
//
// A process that campaigns in many elections can share one liveness
// between its candidacies, as etcd's concurrency.Session shares one lease:
// Client.OpenSession returns a Session and its token, Campaign with
// CampaignRequest.Session (and SessionToken) puts a candidacy in it, and
// Client.HeartbeatSession renews every candidacy of the session with one
// call. When its heartbeats stop for its TTL the session and all its
// candidacies expire; Client.CloseSession resigns them all at once.
// A session campaigns once per election (ErrSessionInElection).
//
//	s, token, err := c.OpenSession(ctx, 10*time.Second)
//	st, _, err := c.Campaign(ctx, "billing", client.CampaignRequest{ID: host, Session: s.ID, SessionToken: token})
//	term := st.Term // while st.State is StateLeader
//	sent := time.Now()
//	s, err = c.HeartbeatSession(ctx, s.ID, token) // every TTL/3
//	deadline, leads := s.StepDownDeadline("billing", term, sent)
//	// !leads: stop acting as leader now
//
// Leadership is unchanged: each candidacy of a session leads or follows
// in its election as any other (Candidate, Watch and Observe say which),
// and each entry of the session heartbeat's answer carries its
// candidacy's State and Term as the candidacy's own heartbeat would. The
// step-down rule holds for each on that answer: Session.StepDownDeadline,
// given the term a leader leads with, is when it must stop acting unless
// renewed again, earlier than the session's for a leader asked to hand
// over, which a heartbeat does not renew; and false when the candidacy no
// longer leads with that term, when the leader must stop acting at once.
// A heartbeat renews a candidacy that the gateway deposed (a failed begin
// webhook, a lowered holders setting) as a follower or in error, so its
// expiry alone does not say it still leads. Use a session when one
// process holds candidacies in many elections and their heartbeats add
// up; a Candidacy campaigns alone, without one.
//
// Client.KeepSession does the heartbeats: it opens a session and renews
// it every TTL/3 until its context ends or SessionKeeper.Close closes it
// (resigning every candidacy), and ends when the gateway answers that the
// session is gone. SessionKeeper.Lead applies the step-down rule to each
// of its answers for a leader:
//
//	k, err := c.KeepSession(ctx, client.SessionConfig{TTL: 10 * time.Second})
//	st, sent, err := k.Campaign(ctx, "billing", client.CampaignRequest{ID: host})
//	if st.State == client.StateLeader {
//		lead, cancel := k.Lead(ctx, "billing", st.Term, sent)
//		defer cancel()
//		work(lead, st.Term) // until lead ends: the deadline passed, or it no longer leads
//	}
//
// A follower learns that it leads from SessionKeeper.Last, whose answer
// lists each candidacy's state and term, or from Observe.
//
// # Observing
//
// Client.Observe (and Candidacy.Observe) follows who leads an election,
// including "no leader", as etcd's Election.Observe does. Client.Watch
// follows all of an election's events, reconnecting after a dropped
// connection and resuming from the last event id it saw, so that every
// event arrives once. A "reset" event carries a Snapshot of the whole
// election: it comes first on a fresh stream, and again when the gateway
// no longer holds the point a resumption asked for.
//
// # Webhooks
//
// ReadWebhook verifies a webhook delivery's Standard Webhooks signature
// with the subscription's secret and returns its event (VerifyWebhook
// checks the signature alone). Deliveries are retried: drop one whose id
// was seen, and act only on a term newer than one acted on.
//
// # The API call by call
//
// Client has one method per call of the HTTP API v1: Campaign returns a
// token that Heartbeat, Resign and ReportError need; the heartbeat's
// answer says whether the candidate leads; an expired candidacy answers
// ErrCandidateNotFound and must campaign again. Leader, Candidates,
// Candidate, Election and Elections read elections; Configure,
// DeleteElection, Transfer, CancelTransfer and Handover change them.
// Subscribe, Subscriptions, Subscription, Unsubscribe and RotateSecret
// manage an election's webhook subscriptions; Deliveries, Delivery and
// Redeliver read and resend their delivery logs, CandidateDeliveries and
// RedeliverCandidate those of a candidate's own webhook
// (CampaignRequest.Webhook). OpenSession, HeartbeatSession and
// CloseSession manage sessions. Health and Ready ask the probes.
//
// The gateway answers errors with RFC 9457 problem documents. They come
// back as a *Problem, which matches the sentinels of this package with
// errors.Is (ErrCandidateNotFound, ErrTokenMismatch, ErrNoLeader, …) and
// can be taken apart with errors.As. Transport errors are returned as the
// http.Client returned them.
//
// Client and Candidacy are safe for concurrent use. Tokens are sent only
// in the Elector-Candidate-Token and Elector-Session-Token headers and
// never appear in errors or logs.
//
// # Module
//
// The client is a module of its own, with nothing but the standard
// library and a go line of 1.22, so that importing it does not raise a
// program's go line to the server's:
//
//	go get github.com/electorhq/elector/client
//
// Its tests that need a gateway run a real `elector serve`: the binary
// named by ELECTOR_BINARY, or one built from the checkout around them.
package client
