package etcd_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// run runs b's reconciler until the test ends.
func run(t *testing.T, b *etcd.Backend) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// events collects a watch's events.
type events struct{ ch <-chan gateway.Event }

// next returns the next event of type typ, failing the test after timeout.
func (w events) next(t *testing.T, typ gateway.EventType, timeout time.Duration) gateway.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-w.ch:
			if !ok {
				t.Fatalf("watch closed waiting for %s", typ)
			}
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s after %s", typ, timeout)
		}
	}
}

func lineOf(t *testing.T, b gateway.Backend, e string) []string {
	t.Helper()
	s, err := b.Election(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range s.Candidates {
		out = append(out, c.ID+":"+string(c.State))
	}
	return out
}

func waitLine(t *testing.T, b gateway.Backend, e string, want ...string) {
	t.Helper()
	eventually.NoError(t, 5*time.Second, fmt.Sprintf("the line %v", want), func() error {
		if got := lineOf(t, b, e); !slices.Equal(got, want) {
			return fmt.Errorf("line = %v", got)
		}
		return nil
	})
}

// TestNativeClientSharesTheLine has a concurrency.Election client and
// elector candidates take turns in one election, in FIFO order, and checks
// that elector's events report the native client's leadership and that the
// native client sees elector's leader.
func TestNativeClientSharesTheLine(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "elector")
	run(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const e = "interop"
	w, err := b.Watch(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	ev := events{w}
	tok := map[string]string{}
	campaign := func(id string) gateway.Status {
		t.Helper()
		tok[id] = gateway.HashToken(gateway.NewToken())
		st, err := b.Campaign(ctx, e, gateway.Candidacy{ID: id, TTL: 10 * time.Second, TokenHash: tok[id]}, gateway.DefaultSettings())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	a := campaign("a")
	if ev.next(t, gateway.EventLeaderBegin, 5*time.Second).Candidate.ID != "a" {
		t.Fatal("a does not lead")
	}

	// A native client joins behind a and blocks in Campaign.
	sess, err := concurrency.NewSession(b.Client(), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	native := concurrency.NewElection(sess, "elector/"+e)
	won := make(chan error, 1)
	go func() { won <- native.Campaign(ctx, "native-1") }()
	waitLine(t, b, e, "a:leader", "native-1:follower")
	if j := ev.next(t, gateway.EventCandidateJoined, 5*time.Second); j.Candidate.ID != "native-1" || j.Reason != gateway.ReasonCampaign {
		t.Fatalf("joined %+v", j)
	}
	// The native client sees elector's leader.
	lr, err := native.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ ID string }
	if err := json.Unmarshal(lr.Kvs[0].Value, &v); err != nil || v.ID != "a" || uint64(lr.Kvs[0].CreateRevision) != a.Term {
		t.Fatalf("native client sees leader %s (rev %d), want a with term %d", lr.Kvs[0].Value, lr.Kvs[0].CreateRevision, a.Term)
	}
	campaign("c")
	waitLine(t, b, e, "a:leader", "native-1:follower", "c:follower")
	select {
	case err := <-won:
		t.Fatalf("native client won while a leads: %v", err)
	default:
	}

	// a resigns: the native client leads, and elector says so.
	if err := b.Resign(ctx, e, "a", tok["a"]); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatalf("native campaign: %v", err)
	}
	begin := ev.next(t, gateway.EventLeaderBegin, 5*time.Second)
	if begin.Candidate.ID != "native-1" || begin.Term != uint64(native.Rev()) || begin.Previous == nil || begin.Previous.ID != "a" || begin.Reason != gateway.ReasonResigned {
		t.Fatalf("leader.begin %+v, want native-1 with term %d after a resigned", begin, native.Rev())
	}
	waitLine(t, b, e, "native-1:leader", "c:follower")

	// The native client resigns: c leads. etcd keeps no reason for a
	// deletion, so elector reports it as an expiry.
	if err := native.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	end := ev.next(t, gateway.EventLeaderEnd, 5*time.Second)
	if end.Candidate.ID != "native-1" || end.Term != begin.Term {
		t.Fatalf("leader.end %+v", end)
	}
	if begin := ev.next(t, gateway.EventLeaderBegin, 5*time.Second); begin.Candidate.ID != "c" || begin.Term <= end.Term {
		t.Fatalf("leader.begin %+v after native-1", begin)
	}

	// A second native client waits behind c and leads when c resigns.
	native2 := concurrency.NewElection(sess, "elector/"+e)
	go func() { won <- native2.Campaign(ctx, "native-2") }()
	waitLine(t, b, e, "c:leader", "native-2:follower")
	if err := b.Resign(ctx, e, "c", tok["c"]); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-won:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("native-2 did not win after c resigned")
	}
	waitLine(t, b, e, "native-2:leader")
	if _, err := b.Heartbeat(ctx, e, "native-2", tok["c"]); !errors.Is(err, gateway.ErrCandidateNotFound) {
		t.Fatalf("heartbeat of a native candidate through elector: %v, want ErrCandidateNotFound", err)
	}
}
