package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// tailReader reads tl in a goroutine until Next fails, and hands on the
// elections of the records it reads.
type tailReader struct {
	names chan string
	err   chan error
}

func readTail(b *Backend, tl *tail) *tailReader {
	r := &tailReader{names: make(chan string, 64), err: make(chan error, 1)}
	go func() {
		for {
			m, _, err := tl.Next()
			if err != nil {
				r.err <- err
				return
			}
			r.names <- b.subj.electionOf(m.Subject())
		}
	}()
	return r
}

// take returns the next n elections read, failing t if the tail fails or
// ctx ends first.
func (r *tailReader) take(ctx context.Context, t *testing.T, n int) []string {
	t.Helper()
	var names []string
	for len(names) < n {
		select {
		case name := <-r.names:
			names = append(names, name)
		case err := <-r.err:
			t.Fatalf("Next after %v: %v", names, err)
		case <-ctx.Done():
			t.Fatalf("read %v, want %d records", names, n)
		}
	}
	return names
}

func electionNames(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("e%d", i))
	}
	return out
}

// TestTailGoesOnAfterItsConsumerIsDeleted deletes a tail's server
// consumer behind its back: the tail makes another from the record after
// the last it returned, so its reader gets every record once and in order,
// and Close leaves no consumer behind, neither the one in use nor the one
// given up.
func TestTailGoesOnAfterItsConsumerIsDeleted(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig()) // no Run: the tail's are the only consumers
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range electionNames(0, 3) {
		campaignT(t, b, name, "a", time.Minute)
	}
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	tl, err := b.openTail(tctx, b.cfg.Stream, jetstream.ConsumerConfig{FilterSubject: b.subj.record("*")})
	if err != nil {
		t.Fatal(err)
	}
	r := readTail(b, tl)
	got := r.take(ctx, t, 3)

	tl.mu.Lock()
	first := tl.name
	tl.mu.Unlock()
	if err := b.js.DeleteConsumer(ctx, b.cfg.Stream, first); err != nil {
		t.Fatalf("delete the tail's consumer %s: %v", first, err)
	}
	for _, name := range electionNames(3, 6) {
		campaignT(t, b, name, "a", time.Minute)
	}
	got = append(got, r.take(ctx, t, 3)...)
	if want := electionNames(0, 6); !slices.Equal(got, want) {
		t.Errorf("records read %v, want %v", got, want)
	}
	if n := tl.drops.Load(); n < 1 {
		t.Errorf("the tail gave up %d consumers, want at least the deleted one", n)
	}
	tcancel()
	if err := <-r.err; !errors.Is(err, errTailClosed) {
		t.Errorf("Next once the tail's context ended: %v, want errTailClosed", err)
	}
	tl.Close()
	if n := consumers(t, b)[b.cfg.Stream]; n != 0 {
		t.Errorf("%d consumers left on the records stream after Close", n)
	}
}

// TestTailOnACutOffMemberGoesOnAfterTheHeal reads the records stream
// through a member that is then cut off from the other two while records
// are written through them: the tail loses its consumer, which is on
// another member (no heartbeats reach it), cannot make another while the
// member is cut off, and after
// the heal goes on with the records written meanwhile, each once and in
// order.
func TestTailOnACutOffMemberGoesOnAfterTheHeal(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	pc := startProxiedCluster(t)
	cfg := freshConfig()
	bs := make([]*Backend, 3)
	for i := range bs {
		bs[i] = openWhenReady(t, pc.servers[i], cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// Cut a member that leads neither the records stream nor the meta
	// group, so that the other two go on taking writes at once.
	c := -1
	eventually.NoErrorUntil(ctx, t, "a member that leads nothing", func() error {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		defer scancel()
		info, err := bs[0].records.Info(sctx)
		if err != nil {
			return err
		}
		for i, e := range pc.servers {
			if name := fmt.Sprintf("n%d", i); name != info.Cluster.Leader && !e.srv.JetStreamIsLeader() {
				c = i
				return nil
			}
		}
		return errors.New("every member leads something")
	})
	o := (c + 1) % 3
	for _, name := range electionNames(0, 3) {
		campaignT(t, bs[o], name, "a", time.Minute)
	}
	// JetStream places an R1 consumer on a member picked at random; one
	// on the member to be cut would go on heartbeating the tail through
	// the cut. Open tails until one's consumer is on another member.
	tctx, tcancel := context.WithCancel(ctx)
	defer tcancel()
	var tl *tail
	eventually.NoErrorUntil(ctx, t, "a tail whose consumer is on another member", func() error {
		if tl != nil {
			tl.Close()
		}
		var err error
		tl, err = bs[c].openTail(tctx, cfg.Stream, jetstream.ConsumerConfig{FilterSubject: bs[c].subj.record("*")})
		if err != nil {
			t.Fatal(err)
		}
		tl.mu.Lock()
		name := tl.name
		tl.mu.Unlock()
		cons, err := bs[c].js.Consumer(ctx, cfg.Stream, name)
		if err != nil {
			return err
		}
		if on := cons.CachedInfo().Cluster.Leader; on == fmt.Sprintf("n%d", c) {
			return fmt.Errorf("the consumer is on n%d itself", c)
		}
		return nil
	})
	r := readTail(bs[c], tl)
	defer func() { // the reader first: only it may close the tail
		tcancel()
		<-r.err
		tl.Close()
	}()
	got := r.take(ctx, t, 3)

	pc.cut(c)
	eventually.NoErrorUntil(ctx, t, "the tail to give its consumer up", func() error {
		if tl.drops.Load() == 0 {
			return errors.New("the tail still holds its first consumer")
		}
		return nil
	})
	// The other two may first elect a leader of a stream the cut-off
	// member led (the liveness stream, the KV bucket). A try that timed
	// out may still have been carried out: then the next finds a there.
	for _, name := range electionNames(3, 6) {
		eventually.NoErrorUntil(ctx, t, "a campaign through the majority", func() error {
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			defer ccancel()
			_, err := bs[o].Campaign(cctx, name, gateway.Candidacy{ID: "a", TTL: time.Minute, TokenHash: gateway.HashToken(gateway.NewToken())}, gateway.DefaultSettings())
			if errors.Is(err, gateway.ErrCandidateExists) {
				return nil
			}
			return err
		})
	}
	pc.heal(c)
	got = append(got, r.take(ctx, t, 3)...)
	if want := electionNames(0, 6); !slices.Equal(got, want) {
		t.Errorf("records read %v, want %v", got, want)
	}
}
