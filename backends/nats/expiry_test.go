package nats

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLeaderThatCrashesAfterAQuickHeartbeatIsReplaced: a leader that
// heartbeats right after its campaign and then stops is the case where the
// server's expiry timer runs up to 250 ms late (expiry.go). The follower
// leads after the leader's TTL, and the leader's liveness subject is left
// with no live message (deleted by Run, or a marker should the server
// have been first).
func TestLeaderThatCrashesAfterAQuickHeartbeatIsReplaced(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	th, _ := campaignT(t, b, "quick", "old", time.Second)
	campaignT(t, b, "quick", "new", time.Minute)
	if _, err := b.Heartbeat(ctx, "quick", "old", th); err != nil {
		t.Fatal(err)
	}
	eventually.NoErrorUntil(ctx, t, "the follower to lead", func() error {
		el, err := b.ElectionLeader(ctx, "quick")
		if err != nil {
			return err
		}
		if el.Leader == nil || el.Leader.ID != "new" || el.Term != 2 {
			return fmt.Errorf("leader %+v at term %d", el.Leader, el.Term)
		}
		return nil
	})
	m, err := b.alive.GetLastMsgForSubject(ctx, b.subj.alive("quick", nonce(th)))
	if err == nil && m.Header.Get(jetstream.MarkerReasonHeader) == "" {
		t.Fatalf("the expired leader still has a live message: %+v", m)
	}
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatal(err)
	}
	if err != nil {
		t.Log("the leader's liveness message was deleted by Run")
	} else {
		t.Log("the server's marker came first")
	}
}

// TestLeaderIsNotExpiredBeforeTheServerSaysSo: when this replica believes
// a leader's liveness message has expired (here, told so wrongly), Run asks
// the server, whose message has most of its TTL left: the leader stays,
// its message stays, and Run watches it again at its real expiry.
func TestLeaderIsNotExpiredBeforeTheServerSaysSo(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	th, _ := campaignT(t, b, "early", "old", time.Hour)
	campaignT(t, b, "early", "new", time.Hour)
	subject := b.subj.alive("early", nonce(th))
	seq, exp, alive, err := b.lastBeat(ctx, subject)
	if err != nil || !alive {
		t.Fatalf("the leader's liveness: alive %v, %v", alive, err)
	}
	k := b.live.key(subject)
	eventually.NoErrorUntil(ctx, t, "Run to watch the leader", func() error {
		b.live.mu.Lock()
		defer b.live.mu.Unlock()
		if b.live.watched[k] == nil {
			return errors.New("not watched")
		}
		return nil
	})
	b.live.learned(subject, seq, time.Now().Add(-time.Second)) // the wrong belief
	eventually.NoErrorUntil(ctx, t, "Run to watch the leader at its real expiry", func() error {
		b.live.mu.Lock()
		defer b.live.mu.Unlock()
		w := b.live.watched[k]
		if w == nil {
			return errors.New("no longer watched")
		}
		at, queued := b.live.queue.At(w)
		if d := at.Sub(exp); !queued || d < -time.Second || d > time.Second {
			return fmt.Errorf("queued %v at %v, the message expires at %v", queued, at, exp)
		}
		return nil
	})
	if got, _, alive, err := b.lastBeat(ctx, subject); err != nil || !alive || got != seq {
		t.Fatalf("the leader's liveness message: seq %d (want %d), alive %v, %v", got, seq, alive, err)
	}
	el, err := b.ElectionLeader(ctx, "early")
	if err != nil || el.Leader == nil || el.Leader.ID != "old" {
		t.Fatalf("leader %+v, %v; want old", el.Leader, err)
	}
}
