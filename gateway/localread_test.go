package gateway_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
)

// markSpy is a memory backend that records, for each read of an election,
// whether its context allowed a local read.
type markSpy struct {
	*memory.Backend
	mu    sync.Mutex
	marks []bool
}

func (s *markSpy) Election(ctx context.Context, election string) (gateway.Election, error) {
	s.mu.Lock()
	s.marks = append(s.marks, gateway.LocalRead(ctx))
	s.mu.Unlock()
	return s.Backend.Election(ctx, election)
}

// take returns the marks recorded since the last take.
func (s *markSpy) take() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.marks
	s.marks = nil
	return m
}

// The reads of elections pass a local read on to the backend; the reads a
// write decides on (a campaign's limit check, Configure's read of the
// settings) never do, whatever the caller's context says.
func TestOnlyReadsOfElectionsPassALocalReadOn(t *testing.T) {
	t.Parallel()
	spy := &markSpy{Backend: memory.New()}
	g := gateway.New(spy, gateway.Config{MaxCandidates: 5, Logger: slog.New(slog.DiscardHandler)})
	local := gateway.WithLocalRead(context.Background())

	if _, _, err := g.Campaign(local, "e", gateway.CampaignRequest{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Configure(local, "e", gateway.SettingsPatch{}); err != nil {
		t.Fatal(err)
	}
	marks := spy.take()
	if len(marks) < 2 {
		t.Fatalf("the campaign's limit check and Configure read %d times, want 2 or more", len(marks))
	}
	for i, m := range marks {
		if m {
			t.Fatalf("read %d of a write was passed a local read", i)
		}
	}

	if _, _, err := g.Leader(local, "e"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Election(local, "e"); err != nil {
		t.Fatal(err)
	}
	if marks := spy.take(); len(marks) != 2 || !marks[0] || !marks[1] {
		t.Fatalf("reads of elections with a local-read context: marks %v, want [true true]", marks)
	}
	if _, err := g.Election(context.Background(), "e"); err != nil {
		t.Fatal(err)
	}
	if marks := spy.take(); len(marks) != 1 || marks[0] {
		t.Fatalf("a read without the mark: marks %v, want [false]", marks)
	}
}
