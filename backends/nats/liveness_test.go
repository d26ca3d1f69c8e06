package nats

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// TestLostLivenessGrantsEveryCandidateAFullTTL restarts the embedded
// server, which loses the in-memory liveness stream: every recorded
// candidate gets a fresh full TTL from the restart, the leader keeps its
// term, and candidates that then stop heartbeating expire as usual.
func TestLostLivenessGrantsEveryCandidateAFullTTL(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	openAt := func() *Backend {
		b, err := OpenEmbedded(ctx, EmbeddedConfig{DataDir: dir, ServerName: "grant"}, Config{SweepInterval: time.Second}, WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const ttl = 3 * time.Second
	b := openAt()
	stopRun := runUntil(b)
	campaignT(t, b, "grant", "x", ttl)
	y, _ := campaignT(t, b, "grant", "y", ttl)
	before, err := b.epochs.current(ctx)
	if err != nil || before == "" {
		t.Fatalf("epoch of the first liveness stream: %q, %v", before, err)
	}
	stopRun()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	b = openAt()
	defer b.Close()
	defer runUntil(b)()
	if after, err := b.epochs.current(ctx); err != nil || after == "" || after == before {
		t.Fatalf("epoch after the restart: %q (before %q), %v; want a new one", after, before, err)
	}
	el, err := b.Election(ctx, "grant")
	if err != nil {
		t.Fatal(err)
	}
	if len(el.Candidates) != 2 || el.Leader == nil || el.Leader.ID != "x" || el.Term != 1 {
		t.Fatalf("after the restart: %+v, want x leading y in term 1", el)
	}
	for _, c := range el.Candidates {
		if c.ExpiresAt.Before(start.Add(ttl)) {
			t.Errorf("%s expires at %s, before a full TTL from the restart at %s", c.ID, c.ExpiresAt, start)
		}
	}
	if st, err := b.Heartbeat(ctx, "grant", "y", y); err != nil || st.Candidate.State != gateway.StateFollower {
		t.Fatalf("heartbeat after the restart: %+v, %v", st, err)
	}
	for {
		el, err := b.Election(ctx, "grant")
		if err == nil && len(el.Candidates) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("granted candidates that stopped heartbeating never expired: %+v", el.Candidates)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestLivenessLostWhileRunningIsGranted deletes the liveness stream under
// a running backend, as a restart of an external NATS would lose it: Run
// makes it again and grants it, and the leader heartbeats on with its
// term instead of being expired.
func TestLivenessLostWhileRunningIsGranted(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	run(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x, st := campaignT(t, b, "lost", "x", 5*time.Second)
	if err := b.js.DeleteStream(ctx, b.cfg.Stream+"_ALIVE"); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := b.Heartbeat(ctx, "lost", "x", x)
		if err == nil {
			if got.Candidate.State != gateway.StateLeader || got.Term != st.Term {
				t.Fatalf("after the liveness stream came back: %+v, want leader in term %d", got, st.Term)
			}
			break
		}
		if !errors.Is(err, gateway.ErrUnavailable) {
			t.Fatalf("heartbeat while the liveness stream is gone: %v, want ErrUnavailable until it is back", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the liveness stream never came back")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestLivenessOfAnOlderLayoutIsMadeAgain opens a store whose liveness
// stream an older version made (on disk; with delete markers, which also
// held the timers): it is made again in memory without markers and its
// candidates are granted, so none is expired by the move.
func TestLivenessOfAnOlderLayoutIsMadeAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		older func(*jetstream.StreamConfig)
	}{
		{"OnDisk", func(c *jetstream.StreamConfig) { c.Storage = jetstream.FileStorage }},
		{"DeleteMarkers", func(c *jetstream.StreamConfig) { c.SubjectDeleteMarkerTTL = time.Minute }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startServer(t, t.TempDir())
			t.Cleanup(e.Shutdown)
			old := open(t, e, freshConfig())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			x, _ := campaignT(t, old, "move", "x", time.Minute)
			cfg := old.aliveStreamConfig()
			tc.older(&cfg)
			if err := old.js.DeleteStream(ctx, cfg.Name); err != nil {
				t.Fatal(err)
			}
			if _, err := old.js.CreateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			b := open(t, e, old.cfg)
			info, err := b.alive.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.Config.Storage != jetstream.MemoryStorage || info.Config.SubjectDeleteMarkerTTL != 0 {
				t.Fatalf("liveness stream in %s with delete markers kept %s, want memory and none", info.Config.Storage, info.Config.SubjectDeleteMarkerTTL)
			}
			if st, err := b.Heartbeat(ctx, "move", "x", x); err != nil || st.Candidate.State != gateway.StateLeader {
				t.Fatalf("heartbeat after the move: %+v, %v", st, err)
			}
			if err := b.Ping(ctx); err != nil {
				t.Fatalf("ping after the move: %v", err)
			}
		})
	}
}

// TestDeleteMarkersOnTheLivenessStreamAreRefused changes the liveness
// stream back to writing delete markers, as a replica of an older version
// starting beside this one would: Ping refuses it, naming why, and a
// candidacy whose message the server replaced by a marker is not expired
// on it (the marker may have removed an acknowledged heartbeat).
func TestDeleteMarkersOnTheLivenessStreamAreRefused(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	b := open(t, e, freshConfig())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := b.aliveStreamConfig()
	cfg.SubjectDeleteMarkerTTL = time.Minute
	if _, err := b.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	err := b.Ping(ctx)
	if !errors.Is(err, gateway.ErrUnavailable) || !strings.Contains(err.Error(), "delete markers") {
		t.Fatalf("ping of a liveness stream with delete markers: %v, want ErrUnavailable naming them", err)
	}

	x, _ := campaignT(t, b, "marked", "x", time.Second)
	subject := b.subj.alive("marked", nonce(x))
	eventually.True(t, 10*time.Second, "the server's delete marker on the candidacy", func() bool {
		m, err := b.alive.GetLastMsgForSubject(ctx, subject)
		return err == nil && m.Header.Get(jetstream.MarkerReasonHeader) != ""
	})
	if _, _, err := b.checkAlive(ctx, subject); !errors.Is(err, errMarker) {
		t.Fatalf("checkAlive of a subject with a delete marker: %v, want errMarker", err)
	}
	if _, err := b.Heartbeat(ctx, "marked", "x", x); !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("heartbeat of a candidacy whose message a delete marker replaced: %v, want ErrUnavailable", err)
	}
	el, err := b.Election(ctx, "marked")
	if err != nil || el.Leader == nil || el.Leader.ID != "x" {
		t.Fatalf("election after the marker: %+v, %v; want x still leading", el, err)
	}
}

// The sweep finds a candidacy in the beats map by aliveKey, without
// building its subject: the key must be the subject's, and making it must
// allocate nothing.
func TestAliveKeyIsTheSubjectsKeyAndAllocatesNothing(t *testing.T) {
	b := &Backend{subj: subjects{prefix: "elector"}, live: newLiveness("elector")}
	hash := gateway.HashToken(gateway.NewToken())
	n := nonce(hash)
	if len(n) != 24 || string(appendNonce(nil, hash)) != n {
		t.Fatalf("nonce %q, appendNonce %q", n, appendNonce(nil, hash))
	}
	if b.live.aliveKey("e1", []byte(n)) != b.live.key(b.subj.alive("e1", n)) {
		t.Fatal("aliveKey differs from the key of the subject")
	}
	if b.live.aliveKey("e1", []byte(n)) == b.live.key(b.subj.alive("e2", n)) {
		t.Fatal("two elections' subjects have one key")
	}
	allocs := testing.AllocsPerRun(100, func() {
		var nb [24]byte
		_ = b.live.aliveKey("e1", appendNonce(nb[:0], hash))
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per key", allocs)
	}
}
