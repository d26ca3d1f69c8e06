package nats

import (
	"context"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// A local read (gateway.WithLocalRead) answers from the replica's view as
// it is, without the read index, while the view's tail follows the
// stream: through a view stopped at a's leadership, it shows a leading
// after a resigned on another replica, where a linearizable read shows b.
// Once the tail has given up its consumer (view.following false), a local
// read is a linearizable one.
func TestLocalReadsAnswerFromTheViewWhileItFollows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, lag := viewStoppedAtALeadership(t, ctx)
	lag.following.Store(true)

	local := gateway.WithLocalRead(ctx)
	reads := []struct {
		name string
		read func(ctx context.Context) (string, error) // the leader's id
	}{
		{"leader", func(ctx context.Context) (string, error) {
			el, err := b.ElectionLeader(ctx, "e")
			return leaderID(el), err
		}},
		{"election", func(ctx context.Context) (string, error) {
			el, err := b.Election(ctx, "e")
			return leaderID(el), err
		}},
		{"elections", func(ctx context.Context) (string, error) {
			all, _, err := b.Elections(ctx)
			if len(all) != 1 {
				return "", err
			}
			return leaderID(all[0]), err
		}},
	}
	for _, r := range reads {
		if id, err := r.read(local); err != nil || id != "a" {
			t.Fatalf("local %s read through a following view stopped at a's leadership: %q, %v; want a", r.name, id, err)
		}
		if id, err := r.read(ctx); err != nil || id != "b" {
			t.Fatalf("linearizable %s read: %q, %v; want b", r.name, id, err)
		}
	}
	lag.following.Store(false)
	for _, r := range reads {
		if id, err := r.read(local); err != nil || id != "b" {
			t.Fatalf("local %s read through a view whose tail gave up its consumer: %q, %v; want b, read as a linearizable one", r.name, id, err)
		}
	}
}

func leaderID(e gateway.Election) string {
	if e.Leader == nil {
		return ""
	}
	return e.Leader.ID
}

// The view of a running Run follows the stream once its tail has made its
// consumer, and stops following when Run ends.
func TestRunsViewFollowsWhileItsTailHasAConsumer(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	campaignT(t, b, "e", "a", time.Minute)
	stop := runUntil(b)
	var v *view
	eventually.True(t, 10*time.Second, "Run's view following the stream", func() bool {
		v = b.running()
		return v != nil && v.following.Load()
	})
	stop()
	if v.following.Load() {
		t.Fatal("the view of a Run that ended still follows the stream")
	}
}
