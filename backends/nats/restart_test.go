package nats

import (
	"context"
	"testing"
	"time"
)

// TestRestartKeepsLeaderAndTerm stops the backend and its embedded server
// and starts them again on the same data dir: a leader that heartbeats
// across the restart is still leader with the same term.
func TestRestartKeepsLeaderAndTerm(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	openAt := func() *Backend {
		b, err := OpenEmbedded(ctx, EmbeddedConfig{DataDir: dir, ServerName: "restart"}, Config{SweepInterval: time.Second}, WithLogger(testLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const ttl = 3 * time.Second
	b := openAt()
	stopRun := runUntil(b)
	// Resign once so that the leader of interest holds term 2, not 1.
	th0, _ := campaignT(t, b, "jobs", "first", ttl)
	if err := b.Resign(ctx, "jobs", "first", th0); err != nil {
		t.Fatal(err)
	}
	th, st := campaignT(t, b, "jobs", "node-a", ttl)
	if st.Candidate.State != "leader" || st.Term != 2 {
		t.Fatalf("after campaign: %s term %d, want leader term 2", st.Candidate.State, st.Term)
	}
	campaignT(t, b, "jobs", "node-b", ttl)
	stopRun()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openAt()
	defer b.Close()
	defer runUntil(b)()
	st, err := b.Heartbeat(ctx, "jobs", "node-a", th)
	if err != nil {
		t.Fatalf("heartbeat after restart: %v", err)
	}
	if st.Candidate.State != "leader" || st.Term != 2 {
		t.Fatalf("after restart: %s term %d, want leader term 2", st.Candidate.State, st.Term)
	}
	el, err := b.Election(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(el.Candidates) != 2 {
		t.Errorf("candidates after restart: %+v, want node-a and node-b", el.Candidates)
	}
}

// runUntil runs b's reconciler until the returned stop is called.
func runUntil(b *Backend) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	return func() { cancel(); <-done }
}
