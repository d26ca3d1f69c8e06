package etcd_test

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// newSessionID returns a session id of the form the gateway gives them.
func newSessionID() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return "ses_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// openSession opens a session of ttl on b and returns its id and the hash
// of its token.
func openSession(t testing.TB, b *etcd.Backend, ttl time.Duration) (id, th string) {
	t.Helper()
	id, th = newSessionID(), gateway.HashToken(gateway.NewToken())
	s, err := b.OpenSession(context.Background(), id, ttl, th)
	if err != nil || s.ID != id || s.TTL != ttl || len(s.Candidates) != 0 {
		t.Fatalf("open session: %+v, %v", s, err)
	}
	return id, th
}

// campaignIn campaigns id into election in session sid (token hash th) and
// fails the test on error.
func campaignIn(t testing.TB, b *etcd.Backend, election, id, sid, th string) gateway.Status {
	t.Helper()
	st, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: id, Session: sid, TokenHash: th}, gateway.DefaultSettings())
	if err != nil {
		t.Fatalf("campaign %s/%s in session %s: %v", election, id, sid, err)
	}
	return st
}

// sessionLease returns the lease of session sid, read from its key.
func sessionLease(t *testing.T, b *etcd.Backend, prefix, sid string) clientv3.LeaseID {
	t.Helper()
	resp, err := b.Client().Get(context.Background(), prefix+"/_elector/sessions/"+sid)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("session key of %s: %v, %v", sid, resp, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// leaseAlive reports whether etcd still has lease.
func leaseAlive(t *testing.T, b *etcd.Backend, lease clientv3.LeaseID) bool {
	t.Helper()
	resp, err := b.Client().TimeToLive(context.Background(), lease)
	if err != nil {
		t.Fatal(err)
	}
	return resp.TTL > 0
}

// revocationsDone waits until b's revoker has tried every revocation
// queued before the call: revocations go in order, so once a lease queued
// now is gone, each queued earlier was tried.
func revocationsDone(t *testing.T, b *etcd.Backend) {
	t.Helper()
	g, err := b.Client().Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	b.RevokeLease(int64(g.ID))
	eventually.True(t, 10*time.Second, "the revoker to reach a lease queued after the others", func() bool { return !leaseAlive(t, b, g.ID) })
}

// leaderOf returns who leads election e on b, "" for nobody.
func leaderOf(t *testing.T, b *etcd.Backend, e string) string {
	t.Helper()
	s, err := b.Election(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if s.Leader == nil {
		return ""
	}
	return s.Leader.ID
}

// findEvent returns the index of the first event of typ for candidate id
// (with reason, unless ""), or -1.
func findEvent(evs []gateway.Event, typ gateway.EventType, id, reason string) int {
	return slices.IndexFunc(evs, func(ev gateway.Event) bool {
		return ev.Type == typ && ev.Candidate != nil && ev.Candidate.ID == id && (reason == "" || ev.Reason == reason)
	})
}

// TestCampaignInSessionIsOneTransaction: a campaign in a session writes
// its candidacy on the session's lease with one transaction and sends
// etcd nothing else: no grant, no keep-alive, no read (the session is in
// the replica's cache). Into an empty election that is the whole
// campaign on a prefix declared upgraded (its transaction acknowledges
// the candidate), and into an election with a line on any prefix.
func TestCampaignInSessionIsOneTransaction(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	for _, declared := range []bool{false, true} {
		prefix := "session-txn-" + strconv.FormatBool(declared)
		b := newBackend(t, ms, prefix)
		if declared {
			if err := b.DeclareUpgraded(ctx); err != nil {
				t.Fatal(err)
			}
		}
		n, err := b.CountRequests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sid, th := openSession(t, b, 10*time.Second)
		xid, xth := openSession(t, b, 10*time.Second)
		campaignIn(t, b, "busy", "x", xid, xth) // a line to join (in a session too: no lease pool granting beside the count)
		n.Take()
		if st := campaignIn(t, b, "busy", "a", sid, th); st.Candidate.State != gateway.StateFollower || st.Candidate.TTL != 10*time.Second {
			t.Fatalf("declared %v: campaign behind x: %+v; want a follower with the session's TTL", declared, st.Candidate)
		}
		if got := n.Take(); !maps.Equal(got, map[string]int{"txn": 1}) {
			t.Fatalf("declared %v: a campaign in a session into a line sent %v; want one transaction and nothing else", declared, got)
		}
		st := campaignIn(t, b, "empty", "a", sid, th)
		if st.Candidate.State != gateway.StateLeader {
			t.Fatalf("declared %v: campaign into an empty election: %+v; want it leading", declared, st.Candidate)
		}
		want := map[string]int{"txn": 2} // the acknowledgement naming the term, as any campaign's before the declaration
		if declared {
			want = map[string]int{"txn": 1}
		}
		if got := n.Take(); !maps.Equal(got, want) {
			t.Fatalf("declared %v: a campaign in a session into an empty election sent %v; want %v", declared, got, want)
		}
	}
}

// TestSessionCandidaciesShareItsLease: a session's candidacies in two
// elections are on the session's lease, and a heartbeat of one of them,
// a follower, renews the other, a leader: the lease's expiry moves for
// both, and the leader's promise is written (the leader may count on the
// renewal, see the package doc's Sessions).
func TestSessionCandidaciesShareItsLease(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	const prefix = "session-share"
	b := newBackend(t, ms, prefix)
	run(t, b)
	sid, th := openSession(t, b, 10*time.Second)
	campaignAs(t, b, "follows", "x", 10*time.Second)
	campaignIn(t, b, "follows", "a", sid, th)
	if st := campaignIn(t, b, "leads", "a", sid, th); st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign into an empty election: %+v; want it leading", st.Candidate)
	}
	lease := sessionLease(t, b, prefix, sid)
	for _, e := range []string{"follows", "leads"} {
		if got := leaseOf(t, b, prefix, e, "a"); got != lease {
			t.Fatalf("candidacy in %s is on lease %x; want the session's, %x", e, got, lease)
		}
	}
	promise := func() int64 {
		resp, err := b.Client().Get(ctx, prefix+"/_elector/promise/leads")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0
		}
		return resp.Kvs[0].ModRevision
	}
	expiry := func() time.Time {
		st, err := b.Status(ctx, "leads", "a", th)
		if err != nil {
			t.Fatal(err)
		}
		return st.Candidate.ExpiresAt
	}
	before, promisedBefore := expiry(), promise()
	st, err := b.Heartbeat(ctx, "follows", "a", th)
	if err != nil || st.Candidate.State != gateway.StateFollower {
		t.Fatalf("heartbeat of the follower: %+v, %v", st, err)
	}
	if after := expiry(); !after.After(before) {
		t.Fatalf("the leader's expiry after its session was renewed: %v, was %v; want later", after, before)
	}
	if p := promise(); p <= promisedBefore {
		t.Fatalf("the leader's promise record at revision %d, was %d: the renewal of its session did not promise it", p, promisedBefore)
	}
}

// TestSessionExpiryEndsEveryCandidacy: a session whose heartbeats stop
// ends with its lease: its leaders in two elections expire, the next in
// line leads in each, and the session is not found any more, on this
// replica and on another.
func TestSessionExpiryEndsEveryCandidacy(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	const prefix = "session-expiry"
	b, b2 := newBackend(t, ms, prefix), newBackend(t, ms, prefix)
	run(t, b)
	sid, th := openSession(t, b, time.Second)
	elections := []string{"x1", "x2"}
	evs := map[string]func() []gateway.Event{}
	for _, e := range elections {
		evs[e] = follow(t, b, e)
		if st := campaignIn(t, b, e, "a", sid, th); st.Candidate.State != gateway.StateLeader {
			t.Fatalf("a in %s: %+v; want it leading", e, st.Candidate)
		}
		keepBeating(t, b, e, "b", campaignAs(t, b, e, "b", 30*time.Second))
	}
	for _, e := range elections {
		eventually.True(t, 15*time.Second, "b to lead "+e+" after the session expired", func() bool {
			got := evs[e]()
			return findEvent(got, gateway.EventLeaderBegin, "b", "") >= 0 && findEvent(got, gateway.EventLeaderEnd, "a", gateway.ReasonExpired) >= 0
		})
	}
	for i, r := range []*etcd.Backend{b, b2} {
		if _, err := r.KeepSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
			t.Fatalf("replica %d: keep the expired session: %v; want ErrSessionNotFound", i, err)
		}
		if _, err := r.Campaign(ctx, "x3", gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrSessionNotFound) {
			t.Fatalf("replica %d: campaign in the expired session: %v; want ErrSessionNotFound", i, err)
		}
		if err := r.CloseSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
			t.Fatalf("replica %d: close the expired session: %v; want ErrSessionNotFound", i, err)
		}
	}
}

// TestCloseSessionHandsOverAtOnce: closing a session resigns each of its
// candidacies, so its leaders hand over at once despite a handover delay
// of a minute, reason resigned, and its lease is revoked. A close cut
// short (a resignation not answered) leaves the session closing: it takes
// no campaign and no heartbeat, and a second close finishes it.
func TestCloseSessionHandsOverAtOnce(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	const prefix = "session-close"
	b := newBackend(t, ms, prefix)
	cut := &hookKV{key: "/_elector/mark/", commit: func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
		if k.fired.CompareAndSwap(false, true) {
			return nil, context.DeadlineExceeded // never sent
		}
		return txn.Commit()
	}}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { cut.KV = kv; return cut }); err != nil {
		t.Fatal(err)
	}
	run(t, b)
	sid, th := openSession(t, b, 10*time.Second)
	lease := sessionLease(t, b, prefix, sid)
	elections := []string{"c1", "c2"}
	evs := map[string]func() []gateway.Event{}
	for _, e := range elections {
		if _, err := b.Configure(ctx, e, gateway.Settings{HandoverDelay: time.Minute, ErrorCooldown: time.Second}); err != nil {
			t.Fatal(err)
		}
		evs[e] = follow(t, b, e)
		campaignIn(t, b, e, "a", sid, th)
		keepBeating(t, b, e, "b", campaignAs(t, b, e, "b", 30*time.Second))
	}
	if err := b.CloseSession(ctx, sid, th); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("close with a resignation unanswered: %v; want ErrUnavailable", err)
	}
	if _, err := b.KeepSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("keep a session being closed: %v; want ErrSessionNotFound", err)
	}
	if _, err := b.Campaign(ctx, "c3", gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("campaign in a session being closed: %v; want ErrSessionNotFound", err)
	}
	if err := b.CloseSession(ctx, sid, th); err != nil {
		t.Fatalf("close again: %v", err)
	}
	for _, e := range elections {
		if l := leaderOf(t, b, e); l != "b" {
			t.Fatalf("%s is led by %q once the close answered; want b at once", e, l)
		}
		eventually.True(t, 10*time.Second, "a's resignation and b's begin in "+e, func() bool {
			got := evs[e]()
			end, begin := findEvent(got, gateway.EventLeaderEnd, "a", gateway.ReasonResigned), findEvent(got, gateway.EventLeaderBegin, "b", "")
			return end >= 0 && begin > end && findEvent(got, gateway.EventCandidateLeft, "a", gateway.ReasonResigned) >= 0
		})
	}
	if leaseAlive(t, b, lease) {
		t.Fatal("the session's lease outlived its close")
	}
	if _, err := b.KeepSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("keep a closed session: %v; want ErrSessionNotFound", err)
	}
	if err := b.CloseSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("close a closed session: %v; want ErrSessionNotFound", err)
	}
}

// TestEndingOneCandidacyOfASessionKeepsItsLease: a resignation, an error
// report and an expiry after a lapsed promise each end one candidacy of a
// session by deleting its keys: the session's lease, its key and its
// other candidacies stay.
func TestEndingOneCandidacyOfASessionKeepsItsLease(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	fc := newFakeClock()
	const prefix, ttl = "session-end-one", 10 * time.Second
	b := newClocked(t, ms, prefix, fc)
	runStoppable(t, b)
	sid, th := openSession(t, b, ttl)
	lease := sessionLease(t, b, prefix, sid)
	if _, err := b.Configure(ctx, "errs", gateway.Settings{ErrorCooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"resigns", "errs", "lapses"} {
		campaignIn(t, b, e, "a", sid, th)
	}
	if err := b.Resign(ctx, "resigns", "a", th); err != nil {
		t.Fatalf("resign: %v", err)
	}
	if st, err := b.ReportError(ctx, "errs", "a", th, "test"); err != nil || st.Candidate.State != gateway.StateError {
		t.Fatalf("report error: %+v, %v", st, err)
	}
	// Nothing renews the leader of "lapses" on the promise clock (its
	// lease lives on in real time): the reconciler expires it.
	fc.Advance(ttl + time.Second)
	eventually.True(t, 10*time.Second, "the leader whose promise lapsed to be expired", func() bool {
		s, err := b.Election(ctx, "lapses")
		return err == nil && len(s.Candidates) == 0
	})
	revocationsDone(t, b)
	if !leaseAlive(t, b, lease) {
		t.Fatal("ending one candidacy of the session revoked its lease")
	}
	if sessionLease(t, b, prefix, sid) != lease {
		t.Fatal("the session's key moved")
	}
	kept, err := b.KeepSession(ctx, sid, th)
	if err != nil {
		t.Fatalf("keep the session: %v", err)
	}
	var left []string
	for _, c := range kept.Candidates {
		left = append(left, c.Election)
	}
	if !slices.Equal(left, []string{"errs"}) {
		t.Fatalf("the session's candidacies: %v; want the one cooling", left)
	}
}

// TestSessionRefusals: a wrong token, a second candidacy of the session in
// an election (also while the first is cooling), the same candidacy again,
// and a session nobody opened.
func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	b := newBackend(t, ms, "session-refusals")
	sid, th := openSession(t, b, 10*time.Second)
	other := gateway.HashToken(gateway.NewToken())
	if _, err := b.KeepSession(ctx, sid, other); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("keep with another token: %v; want ErrTokenMismatch", err)
	}
	if err := b.CloseSession(ctx, sid, other); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("close with another token: %v; want ErrTokenMismatch", err)
	}
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", Session: sid, TokenHash: other}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrTokenMismatch) {
		t.Fatalf("campaign with another token: %v; want ErrTokenMismatch", err)
	}
	campaignIn(t, b, "e", "a", sid, th)
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "b", Session: sid, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrSessionInElection) {
		t.Fatalf("a second candidacy of the session: %v; want ErrSessionInElection", err)
	}
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrCandidateExists) {
		t.Fatalf("the same candidacy again: %v; want ErrCandidateExists", err)
	}
	if _, err := b.ReportError(ctx, "e", "a", th, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "b", Session: sid, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrSessionInElection) {
		t.Fatalf("a second candidacy while the first is cooling: %v; want ErrSessionInElection", err)
	}
	if s, err := b.Election(ctx, "e"); err != nil || len(s.Candidates) != 1 {
		t.Fatalf("election e: %+v, %v; want the session's one candidacy", s.Candidates, err)
	}
	nobody := newSessionID()
	if _, err := b.Campaign(ctx, "e", gateway.Candidacy{ID: "c", Session: nobody, TokenHash: th}, gateway.DefaultSettings()); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("campaign in a session nobody opened: %v; want ErrSessionNotFound", err)
	}
	if _, err := b.KeepSession(ctx, nobody, th); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("keep a session nobody opened: %v; want ErrSessionNotFound", err)
	}
}

// TestKeepSessionGivesAFailedLeaderNothing: the gateway's verdict ends a
// leader of a session while it may not know: its slot stays taken until
// its promise lapses, and a renewal of its session must not extend what
// it counts on, so the session's answer gives it nothing (its entry
// expires when the renewal was sent), while the session's other
// candidacies get the session's TTL.
func TestKeepSessionGivesAFailedLeaderNothing(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	b := newBackend(t, ms, "session-failed")
	run(t, b)
	const ttl = 10 * time.Second
	sid, th := openSession(t, b, ttl)
	st := campaignIn(t, b, "fails", "a", sid, th)
	campaignIn(t, b, "other", "a", sid, th)
	if _, err := b.FailLeader(ctx, "fails", "a", th, st.Term, "begin webhook unanswered"); err != nil {
		t.Fatal(err)
	}
	kept, err := b.KeepSession(ctx, sid, th)
	if err != nil {
		t.Fatal(err)
	}
	sent := kept.ExpiresAt.Add(-ttl)
	for _, c := range kept.Candidates {
		want := kept.ExpiresAt
		if c.Election == "fails" {
			want = sent
		}
		if !c.ExpiresAt.Equal(want) {
			t.Fatalf("entry %+v in the session's answer (expiring %v); want it to expire at %v", c, kept.ExpiresAt, want)
		}
	}
	if len(kept.Candidates) != 2 {
		t.Fatalf("the session's candidacies: %+v; want both", kept.Candidates)
	}
}

// TestTransferAwayFromASessionLeader: a leader in a session asked to hand
// over has its own heartbeats refused, but its session's renewals renew
// its key and promise it; so the transfer completes only by its handover
// or once its session ends, never while its session's answers may still
// tell it that it is renewed.
func TestTransferAwayFromASessionLeader(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	b := newBackend(t, ms, "session-transfer")
	run(t, b)
	const ttl = time.Second
	for _, ends := range []string{"handover", "expiry"} {
		e := "by-" + ends
		evs := follow(t, b, e)
		sid, th := openSession(t, b, ttl)
		campaignIn(t, b, e, "a", sid, th)
		keepBeating(t, b, e, "b", campaignAs(t, b, e, "b", 30*time.Second))
		if _, err := b.TransferFrom(ctx, e, "", "b", th); err != nil {
			t.Fatalf("%s: transfer: %v", e, err)
		}
		if _, err := b.Heartbeat(ctx, e, "a", th); !errors.Is(err, gateway.ErrTransferPending) {
			t.Fatalf("%s: the leader's own heartbeat: %v; want ErrTransferPending", e, err)
		}
		// Renewed by its session three TTLs long, at a third of its TTL:
		// it still leads, and b has not begun.
		var promised time.Time
		tick := time.NewTicker(ttl / 3)
		for range 9 {
			<-tick.C
			kept, err := b.KeepSession(ctx, sid, th)
			if err != nil {
				t.Fatalf("%s: keep session: %v", e, err)
			}
			if len(kept.Candidates) != 1 || !kept.Candidates[0].ExpiresAt.Equal(kept.ExpiresAt) {
				t.Fatalf("%s: the session's answer %+v; want a renewed by the session's TTL", e, kept)
			}
			promised = kept.Candidates[0].ExpiresAt
		}
		tick.Stop()
		if l := leaderOf(t, b, e); l != "a" || findEvent(evs(), gateway.EventLeaderBegin, "b", "") >= 0 {
			t.Fatalf("%s: led by %q while the session of a was renewed; want a", e, l)
		}
		if ends == "handover" {
			if _, err := b.Handover(ctx, e, "a", th); err != nil {
				t.Fatalf("%s: handover: %v", e, err)
			}
			if l := leaderOf(t, b, e); l != "b" {
				t.Fatalf("%s: led by %q after the handover; want b at once", e, l)
			}
			continue
		}
		// The session's renewals stop: b begins, and only once the last
		// of them has run out.
		var begin gateway.Event
		eventually.True(t, 15*time.Second, "b to begin after a's session ended", func() bool {
			got := evs()
			i := findEvent(got, gateway.EventLeaderBegin, "b", "")
			if i >= 0 {
				begin = got[i]
			}
			return i >= 0
		})
		if begin.Time.Before(promised) {
			t.Fatalf("b began at %v, but a's session was last renewed until %v", begin.Time, promised)
		}
	}
}

// TestSessionLeaderRevokedEarlyWaitsForItsLastRenewal: etcd revokes a
// session's lease long before its TTL (a frozen raft leader resuming),
// right after a renewal of the session promised its leaders of two
// elections a TTL from then. Nobody leads either election until that
// promise has lapsed on the replicas' clocks, though the acknowledgements'
// own promises lapsed earlier; then the next in line leads each.
func TestSessionLeaderRevokedEarlyWaitsForItsLastRenewal(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	fc := newFakeClock()
	const prefix, ttl = "session-revoked", 10 * time.Second
	b1, b2 := newClocked(t, ms, prefix, fc), newClocked(t, ms, prefix, fc)
	runStoppable(t, b1)
	runStoppable(t, b2)
	sid, th := openSession(t, b1, ttl)
	elections := []string{"r1", "r2"}
	thf := map[string]string{}
	for _, e := range elections {
		if st := campaignIn(t, b1, e, "a", sid, th); st.Candidate.State != gateway.StateLeader {
			t.Fatalf("a in %s: %+v; want it leading", e, st.Candidate)
		}
		thf[e] = campaignAs(t, b1, e, "f", ttl)
		keepBeating(t, b1, e, "f", thf[e]) // its lease lives on in real time; only the promise clock is fake
	}
	fc.Advance(ttl / 2)
	if _, err := b2.KeepSession(ctx, sid, th); err != nil { // through the other replica
		t.Fatal(err)
	}
	rev := revokeLease(t, b1, sessionLease(t, b1, prefix, sid))
	fc.Advance(ttl/2 + time.Second) // the acknowledgements' promises have lapsed; the renewal's has not
	for _, b := range []*etcd.Backend{b1, b2} {
		reconciled(t, b, rev, fc)
	}
	for _, e := range elections {
		noLeaderBut(t, []*etcd.Backend{b1, b2}, e, "f", thf[e])
	}
	if _, err := b1.KeepSession(ctx, sid, th); !errors.Is(err, gateway.ErrSessionNotFound) {
		t.Fatalf("keep the revoked session: %v; want ErrSessionNotFound", err)
	}
	fc.Advance(ttl / 2)
	for _, e := range elections {
		eventually.True(t, 10*time.Second, "f to lead "+e+" once the renewal's promise lapsed", func() bool { return leaderOf(t, b2, e) == "f" })
	}
}

// TestSessionCampaignWhoseAnswerIsLost: a campaign in a session whose
// transaction's answer does not come cannot revoke its lease (the
// session's); it fences the session and asks etcd. A transaction that
// applied is a campaign that succeeded; one that did not fails as
// unavailable, and cannot apply later: sent after the campaign gave up,
// the fence refuses it.
func TestSessionCampaignWhoseAnswerIsLost(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	ctx := context.Background()
	for _, landed := range []bool{true, false} {
		b := newBackend(t, ms, "session-lost-"+strconv.FormatBool(landed))
		lost := &heldKV{apply: landed}
		if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { lost.KV = kv; return lost }); err != nil {
			t.Fatal(err)
		}
		run(t, b)
		sid, th := openSession(t, b, 10*time.Second)
		st, err := b.Campaign(ctx, "lost", gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}, gateway.DefaultSettings())
		if !lost.fired.Load() {
			t.Fatalf("applied %v: the campaign's transaction did not lose its answer", landed)
		}
		if !landed {
			if !errors.Is(err, gateway.ErrUnavailable) {
				t.Fatalf("applied %v: campaign: %+v, %v; want ErrUnavailable", landed, st, err)
			}
			if resp, err := b.Client().Txn(ctx).If(lost.cmps...).Then(lost.thens...).Else(lost.elses...).Commit(); err != nil || resp.Succeeded {
				t.Fatalf("the transaction sent after the campaign gave up: %+v, %v; want it refused", resp, err)
			}
			if st, err = b.Campaign(ctx, "lost", gateway.Candidacy{ID: "a", Session: sid, TokenHash: th}, gateway.DefaultSettings()); err != nil {
				t.Fatalf("the campaign again: %v", err)
			}
		}
		if err != nil || st.Candidate.State != gateway.StateLeader {
			t.Fatalf("applied %v: campaign: %+v, %v; want a leading", landed, st, err)
		}
		if kept, err := b.KeepSession(ctx, sid, th); err != nil || len(kept.Candidates) != 1 {
			t.Fatalf("applied %v: keep the session: %+v, %v; want its one candidacy", landed, kept, err)
		}
	}
}

// heldKV is a clientv3.KV whose first transaction putting a candidate's
// id key gets no answer: applied (apply), or not sent, and kept (cmps,
// thens, elses) for the test to send later.
type heldKV struct {
	clientv3.KV
	apply        bool
	fired        atomic.Bool
	cmps         []clientv3.Cmp
	thens, elses []clientv3.Op
}

func (k *heldKV) Txn(ctx context.Context) clientv3.Txn {
	return &heldTxn{Txn: k.KV.Txn(ctx), kv: k}
}

type heldTxn struct {
	clientv3.Txn
	kv           *heldKV
	cmps         []clientv3.Cmp
	thens, elses []clientv3.Op
}

func (t *heldTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.cmps = cs; t.Txn = t.Txn.If(cs...); return t }
func (t *heldTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thens = ops
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *heldTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elses = ops
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *heldTxn) Commit() (*clientv3.TxnResponse, error) {
	if !putsKey(t.thens, "/_elector/ids/") || !t.kv.fired.CompareAndSwap(false, true) {
		return t.Txn.Commit()
	}
	if t.kv.apply {
		if _, err := t.Txn.Commit(); err != nil {
			return nil, err
		}
	} else {
		t.kv.cmps, t.kv.thens, t.kv.elses = t.cmps, t.thens, t.elses
	}
	return nil, context.DeadlineExceeded
}
