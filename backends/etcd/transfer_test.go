package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
)

// interop is one election shared by elector candidates of one backend
// (with its reconciler running) and native concurrency.Election clients.
type interop struct {
	t    *testing.T
	b    *etcd.Backend
	e    string
	sess *concurrency.Session
	tok  map[string]string
}

func newInterop(t *testing.T, e string) *interop {
	t.Helper()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	run(t, b)
	sess, err := concurrency.NewSession(b.Client(), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return &interop{t: t, b: b, e: e, sess: sess, tok: map[string]string{}}
}

func (x *interop) campaign(id string, prio int) gateway.Status {
	x.t.Helper()
	x.tok[id] = gateway.HashToken(gateway.NewToken())
	st, err := x.b.Campaign(context.Background(), x.e, gateway.Candidacy{ID: id, TTL: 10 * time.Second, Priority: prio, TokenHash: x.tok[id]}, gateway.DefaultSettings())
	if err != nil {
		x.t.Fatal(err)
	}
	return st
}

// native starts a native client campaigning with value id; its result
// arrives on the returned channel when it wins (or fails).
func (x *interop) native(ctx context.Context, id string) (*concurrency.Election, <-chan error) {
	n := concurrency.NewElection(x.sess, "elector/"+x.e)
	won := make(chan error, 1)
	go func() { won <- n.Campaign(ctx, id) }()
	return n, won
}

// nativeSeesLeader checks that a native client's Leader is elector's
// leader: the same candidate, its key's create revision the term.
func (x *interop) nativeSeesLeader(n *concurrency.Election, id string) {
	x.t.Helper()
	s, err := x.b.Election(context.Background(), x.e)
	if err != nil {
		x.t.Fatal(err)
	}
	if s.Leader == nil || s.Leader.ID != id {
		x.t.Fatalf("elector's leader is %+v, want %s", s.Leader, id)
	}
	lr, err := n.Leader(context.Background())
	if err != nil {
		x.t.Fatal(err)
	}
	// An elector candidate's value is JSON with its id; a native client's
	// is the value it proclaimed.
	v := struct{ ID string }{ID: string(lr.Kvs[0].Value)}
	_ = json.Unmarshal(lr.Kvs[0].Value, &v)
	if v.ID != id || uint64(lr.Kvs[0].CreateRevision) != s.Term {
		x.t.Fatalf("native client sees leader %s (revision %d), want %s with term %d", lr.Kvs[0].Value, lr.Kvs[0].CreateRevision, id, s.Term)
	}
}

var quiet = slog.New(slog.DiscardHandler)

func notWon(t *testing.T, won <-chan error, while string) {
	t.Helper()
	select {
	case err := <-won:
		t.Fatalf("native client won (%v) while %s", err, while)
	default:
	}
}

// TestNativeClientSeesTransfersAndPriorities transfers the leadership and
// orders elector candidates by priority in an election with a native
// concurrency.Election client in line: after each step the native client
// sees elector's leader as the oldest key, the native client keeps its
// place (priorities reorder only the elector candidates behind it), and it
// leads exactly when the candidates ahead of it are gone.
func TestNativeClientSeesTransfersAndPriorities(t *testing.T) {
	t.Parallel()
	x := newInterop(t, "xfer")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	a := x.campaign("a", 0)
	x.campaign("b", 0)
	x.campaign("c", 0)
	n, won := x.native(ctx, "native-1")
	waitLine(t, x.b, x.e, "a:leader", "b:follower", "c:follower", "native-1:follower")
	snap, err := x.b.Election(ctx, x.e)
	if err != nil {
		t.Fatal(err)
	}
	w, err := x.b.Watch(ctx, x.e, snap.Cursor)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := x.b.Transfer(ctx, x.e, "c", ""); err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	st, err := x.b.Handover(ctx, x.e, "a", x.tok["a"])
	if err != nil {
		t.Fatalf("handover: %v", err)
	}
	if st.Leader == nil || st.Leader.ID != "c" || st.Term <= a.Term {
		t.Fatalf("after handover: %+v, want c leading a term after %d", st, a.Term)
	}
	// a and b moved behind c, and behind the native client: it overtook
	// them and was overtaken by nobody.
	waitLine(t, x.b, x.e, "c:leader", "native-1:follower", "b:follower", "a:follower")
	x.nativeSeesLeader(n, "c")
	notWon(t, won, "c leads")

	// Priorities order the elector candidates behind the native client;
	// it keeps its place.
	x.campaign("d", 0)
	x.campaign("e", 5)
	waitLine(t, x.b, x.e, "c:leader", "native-1:follower", "e:follower", "b:follower", "a:follower", "d:follower")
	x.nativeSeesLeader(n, "c")
	notWon(t, won, "c leads")

	// c resigns: the native client, next in line, leads.
	if err := x.b.Resign(ctx, x.e, "c", x.tok["c"]); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatalf("native campaign: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the native client did not win after c resigned")
	}
	waitLine(t, x.b, x.e, "native-1:leader", "e:follower", "b:follower", "a:follower", "d:follower")
	x.nativeSeesLeader(n, "native-1")

	// The keys that moved are the same candidates: nobody left or joined
	// but d and e, and c when it resigned.
	expectEvents(t, "events", w, x.e,
		gateway.EventLeaderTransfer, gateway.EventLeaderEnd, gateway.EventLeaderBegin, // the handover
		gateway.EventCandidateJoined, gateway.EventCandidateJoined, // d, e
		gateway.EventLeaderEnd, gateway.EventCandidateLeft, gateway.EventLeaderBegin) // c resigned
}

// TestTransferPastNativeClientIsRefused checks that a transfer to a
// candidate behind a native client's key is refused (409
// transfer-blocked, naming the native candidate), that changes nothing,
// and that a transfer to the native client itself works: it leads once
// the elector leader hands over, as it sees for itself.
func TestTransferPastNativeClientIsRefused(t *testing.T) {
	t.Parallel()
	x := newInterop(t, "blocked")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	x.campaign("a", 0)
	n, won := x.native(ctx, "native-1")
	waitLine(t, x.b, x.e, "a:leader", "native-1:follower")
	x.campaign("b", 0)

	_, err := x.b.Transfer(ctx, x.e, "b", "")
	var tb *gateway.TransferBlockedError
	if !errors.As(err, &tb) || !errors.Is(err, gateway.ErrTransferBlocked) || !strings.Contains(tb.Reason, "native-1") {
		t.Fatalf("transfer past the native client: %v, want a *TransferBlockedError naming native-1", err)
	}

	// The same through the API: 409 problem+json saying why.
	srv := httptest.NewServer(api.New(gateway.New(x.b, gateway.Config{Logger: quiet}), api.Config{Logger: quiet}))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/v1/elections/"+x.e+"/transfer", "application/json", strings.NewReader(`{"to":"b"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	var p struct{ Type, Detail string }
	if err := json.Unmarshal(body, &p); err != nil || res.StatusCode != http.StatusConflict ||
		res.Header.Get("Content-Type") != "application/problem+json" ||
		p.Type != "urn:elector:problem:transfer-blocked" || !strings.Contains(p.Detail, "native-1") {
		t.Fatalf("POST transfer: %d %s %s, want 409 transfer-blocked naming native-1", res.StatusCode, res.Header.Get("Content-Type"), body)
	}

	s, err := x.b.Election(ctx, x.e)
	if err != nil {
		t.Fatal(err)
	}
	if s.Transfer != nil {
		t.Fatalf("a refused transfer is pending: %+v", s.Transfer)
	}
	if st, err := x.b.Heartbeat(ctx, x.e, "a", x.tok["a"]); err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("heartbeat of a after the refused transfer: %+v, %v", st, err)
	}
	notWon(t, won, "a leads")

	// A transfer to the native client itself is fine: nothing stands
	// between, and a's key moves behind it.
	if _, err := x.b.Transfer(ctx, x.e, "native-1", ""); err != nil {
		t.Fatalf("transfer to the native client: %v", err)
	}
	if _, err := x.b.Heartbeat(ctx, x.e, "a", x.tok["a"]); !errors.Is(err, gateway.ErrTransferPending) {
		t.Fatalf("heartbeat of a with a transfer pending: %v, want ErrTransferPending", err)
	}
	notWon(t, won, "a has not handed over")
	if _, err := x.b.Handover(ctx, x.e, "a", x.tok["a"]); err != nil {
		t.Fatalf("handover: %v", err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatalf("native campaign: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the native client did not win after a handed over to it")
	}
	waitLine(t, x.b, x.e, "native-1:leader", "b:follower", "a:follower")
	x.nativeSeesLeader(n, "native-1")
}

// TestLeaderResigningWithTransferPendingHandsOverToTarget checks that a
// leader that resigns instead of handing over hands over to the target of
// the pending transfer, not to the next in line when the transfer was
// asked for, and that a native client behind them sees the same leader.
func TestLeaderResigningWithTransferPendingHandsOverToTarget(t *testing.T) {
	t.Parallel()
	x := newInterop(t, "resign")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	x.campaign("a", 0)
	x.campaign("b", 0)
	x.campaign("c", 0)
	n, won := x.native(ctx, "native-1")
	waitLine(t, x.b, x.e, "a:leader", "b:follower", "c:follower", "native-1:follower")
	if _, err := x.b.Transfer(ctx, x.e, "c", ""); err != nil {
		t.Fatalf("transfer to c: %v", err)
	}
	if err := x.b.Resign(ctx, x.e, "a", x.tok["a"]); err != nil {
		t.Fatal(err)
	}
	s, err := x.b.Election(ctx, x.e)
	if err != nil {
		t.Fatal(err)
	}
	if s.Leader == nil || s.Leader.ID != "c" || s.Transfer != nil {
		t.Fatalf("after a resigned: leader %+v, transfer %+v; want c leading, no transfer", s.Leader, s.Transfer)
	}
	x.nativeSeesLeader(n, "c")
	notWon(t, won, "c leads")
}

// TestTransferWrittenAfterTheLeaderWentFails: a transfer computed while a
// leader led, committed after its key went (its lease revoked; its promise
// then holds the next leader back, so nobody leads for a while), must not
// be written: it would be pending with nobody leading, and its
// cancellation would be the only event ever to mention it.
func TestTransferWrittenAfterTheLeaderWentFails(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	const prefix, e = "stale-transfer", "transfer"
	b := newBackend(t, ms, prefix)
	ctx := context.Background()
	thl := campaignAs(t, b, e, "l", 10*time.Second)
	campaignAs(t, b, e, "a", 10*time.Second)
	campaignAs(t, b, e, "t", 10*time.Second)
	if _, err := b.Heartbeat(ctx, e, "l", thl); err != nil {
		t.Fatal(err)
	}
	commit, err := b.PrepareTransfer(ctx, e, "t")
	if err != nil {
		t.Fatal(err)
	}
	revokeLease(t, b, leaseOf(t, b, prefix, e, "l"))
	if ok, err := commit(); err != nil || ok {
		t.Fatalf("transfer committed after the leader's key went: applied %v, %v; want refused", ok, err)
	}
	s, err := b.Election(ctx, e)
	if err != nil || s.Leader != nil || s.Transfer != nil {
		t.Fatalf("after the refused transfer: leader %+v, transfer %+v, %v; want neither", s.Leader, s.Transfer, err)
	}
}
