package nats

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/testnet"
)

// waitLog collects the reasons OpenEmbedded gives while it waits.
type waitLog struct {
	mu      sync.Mutex
	reasons []string
	added   chan struct{} // closed (and replaced) by add; nil until first waited on
}

func (w *waitLog) add(r string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reasons = append(w.reasons, r)
	if w.added != nil {
		close(w.added)
		w.added = nil
	}
}

// waitFor waits until a reason containing s was given.
func (w *waitLog) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		for _, r := range w.reasons {
			if strings.Contains(r, s) {
				w.mu.Unlock()
				return
			}
		}
		got := append([]string(nil), w.reasons...)
		if w.added == nil {
			w.added = make(chan struct{})
		}
		added := w.added
		w.mu.Unlock()
		select {
		case <-added:
		case <-timeout.C:
			t.Fatalf("no wait reason containing %q; got %q", s, got)
		}
	}
}

// TestOpenEmbeddedClusterWaitsForLateMembers starts the members of a
// three-member cluster one at a time, the next only once the earlier ones
// say they wait for it: none gives up (the second used to fail with "no
// suitable peers for placement"), each says why it waits, and all three
// open once the last one starts.
func TestOpenEmbeddedClusterWaitsForLateMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("three-server cluster")
	}
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = testnet.FreeAddr(t) // not ":0": an outgoing connection may take that port first
	}
	cfg := Config{Stream: "LATE", SubjectPrefix: "late", SweepInterval: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type result struct {
		b   *Backend
		err error
	}
	waits := make([]*waitLog, 3)
	results := make([]chan result, 3)
	start := func(i int) {
		var routes []string
		for j, a := range addrs {
			if j != i {
				routes = append(routes, a)
			}
		}
		waits[i], results[i] = &waitLog{}, make(chan result, 1)
		ecfg := EmbeddedConfig{
			DataDir: t.TempDir(), ServerName: fmt.Sprintf("late-%d", i),
			ClusterListen: addrs[i], Routes: routes, OnWait: waits[i].add,
		}
		go func() {
			b, err := OpenEmbedded(ctx, ecfg, cfg, WithLogger(slog.New(slog.DiscardHandler)))
			results[i] <- result{b, err}
		}()
	}
	var opened []*Backend
	defer func() {
		for _, b := range opened {
			_ = b.Close()
		}
	}()

	start(0)
	waits[0].waitFor(t, "connected to 0 of the 2 other cluster members")
	start(1)
	// Two of three elect a JetStream leader but cannot place R3 streams:
	// both keep waiting for the third.
	waits[0].waitFor(t, "connected to 1 of the 2")
	waits[1].waitFor(t, "connected to 1 of the 2")
	for i := range 2 {
		select {
		case r := <-results[i]:
			t.Fatalf("member %d returned before the third started: %v", i, r.err)
		default:
		}
	}
	start(2)
	for i := range 3 {
		r := <-results[i]
		if r.err != nil {
			t.Fatalf("member %d: %v", i, r.err)
		}
		opened = append(opened, r.b)
	}
	for _, b := range opened {
		run(t, b)
	}
	_, st := campaignT(t, opened[2], "late", "node-a", time.Minute)
	if st.Leader == nil || st.Leader.ID != "node-a" || st.Term == 0 {
		t.Fatalf("first candidate's status %+v; want it leading with a term", st)
	}
}

// TestOpenEmbeddedStopsWaitingWhenContextEnds ends the context of a member
// whose peers never start: OpenEmbedded returns the context's error and
// shuts its server down.
func TestOpenEmbeddedStopsWaitingWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &waitLog{}
	ecfg := EmbeddedConfig{
		DataDir: t.TempDir(), ServerName: "alone",
		ClusterListen: "127.0.0.1:0", Routes: []string{"127.0.0.1:1"}, OnWait: w.add,
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenEmbedded(ctx, ecfg, Config{}, WithLogger(slog.New(slog.DiscardHandler)))
		done <- err
	}()
	w.waitFor(t, "connected to 0 of the 1 other cluster members")
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Fatalf("OpenEmbedded after cancel: %v; want the context's error", err)
	}
}

// TestStandaloneEmbeddedReadsItsReadIndexInProcess: a standalone embedded
// server's read index comes from its own store, and is the sequence the
// stream leader's answer gives, after every write.
func TestStandaloneEmbeddedReadsItsReadIndexInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := OpenEmbedded(ctx, EmbeddedConfig{DataDir: t.TempDir()}, Config{}, WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.localHead == nil {
		t.Fatal("no in-process read index on a standalone server")
	}
	for i := range 3 {
		local, err := b.fetchHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		local2 := b.localHead
		b.localHead = nil
		remote, err := b.fetchHead(ctx)
		b.localHead = local2
		if err != nil {
			t.Fatal(err)
		}
		if local != remote {
			t.Fatalf("after %d writes: in process %d, from the stream leader %d", i, local, remote)
		}
		campaignT(t, b, "head", fmt.Sprintf("c%d", i), time.Minute)
	}
}
