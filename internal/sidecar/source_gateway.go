package sidecar

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/client"
)

// gatewaySource is a client.Candidacy seen as a source: the candidacy
// campaigns, heartbeats, obeys the step-down rule and learns of its
// leadership from the event stream; the source passes its standings on.
//
// While paused (the health check fails) it holds no candidacy: Pause
// resigns the one that runs, and Resume campaigns with a new one, at the
// back of the line. A candidacy ends for good only with Resign.
type gatewaySource struct {
	cfg client.CandidacyConfig

	running atomic.Bool // Run runs
	wake    chan struct{}

	mu       sync.Mutex
	next     *client.Candidacy // made by newGatewaySource, run first
	cand     *client.Candidacy // the running candidacy, once it has said where it stands
	last     *client.Candidacy // the latest candidacy, also after it ended
	asked    bool              // cand was asked to resign
	paused   bool
	resigned bool
}

// newGatewaySource checks cfg by making the first candidacy; paused
// holds it back until Resume.
func newGatewaySource(cfg client.CandidacyConfig, paused bool) (*gatewaySource, error) {
	cand, err := client.NewCandidacy(cfg)
	if err != nil {
		return nil, err
	}
	return &gatewaySource{cfg: cfg, next: cand, paused: paused, wake: make(chan struct{}, 1)}, nil
}

// Run runs candidacies and passes their standings on until ctx ends or
// the source resigned: one at a time, a new one after a pause. A standing
// the reconciler has not taken yet is replaced by the next, as the
// candidacy's own channel does: the reconciler acts on the latest.
func (s *gatewaySource) Run(ctx context.Context, out chan observation) error {
	s.running.Store(true)
	defer s.running.Store(false)
	for {
		s.mu.Lock()
		paused, resigned := s.paused, s.resigned
		s.mu.Unlock()
		switch {
		case resigned:
			return nil
		case paused:
			select {
			case <-ctx.Done():
				return nil
			case <-s.wake:
				continue
			}
		}
		cand, err := s.candidacy()
		if err != nil {
			return err
		}
		errc := make(chan error, 1)
		go func() { errc <- cand.Run(ctx) }()
		for st := range cand.States() {
			if s.track(cand) {
				// Paused before it ran: its first standing says it runs,
				// so a resignation reaches it now.
				_ = cand.Resign(ctx)
			}
			offer(out, observation{leading: st.Leading, term: st.Term, leader: st.Leader, reason: st.Reason})
		}
		s.mu.Lock()
		s.cand, s.asked = nil, false
		s.mu.Unlock()
		if err := <-errc; err != nil || ctx.Err() != nil {
			return err
		}
		// It resigned: Pause or Resign. The loop tells which.
	}
}

// candidacy is the candidacy to run next.
func (s *gatewaySource) candidacy() (*client.Candidacy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cand := s.next
	s.next = nil
	if cand == nil {
		var err error
		if cand, err = client.NewCandidacy(s.cfg); err != nil {
			return nil, err
		}
	}
	s.last = cand
	return cand, nil
}

// track records that cand runs; it reports whether cand must resign now
// (a pause or resignation came before cand could be reached).
func (s *gatewaySource) track(cand *client.Candidacy) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cand = cand
	if (s.paused || s.resigned) && !s.asked {
		s.asked = true
		return true
	}
	return false
}

// leave asks the running candidacy, if any, to resign.
func (s *gatewaySource) leave(ctx context.Context) error {
	s.mu.Lock()
	cand := s.cand
	ask := cand != nil && !s.asked
	s.asked = s.asked || ask
	s.mu.Unlock()
	if !ask {
		return nil
	}
	return cand.Resign(ctx)
}

// current is the running candidacy, or nil.
func (s *gatewaySource) current() *client.Candidacy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cand
}

// Fail reports the error to the gateway (which hands leadership over) and
// starts the error timeout.
func (s *gatewaySource) Fail(ctx context.Context, reason string) error {
	if c := s.current(); c != nil {
		return c.ReportError(ctx, reason)
	}
	return client.ErrNotRunning
}

// Handover hands the leadership over to the target of a pending transfer.
func (s *gatewaySource) Handover(ctx context.Context) error {
	if c := s.current(); c != nil {
		return c.Handover(ctx)
	}
	return client.ErrNotRunning
}

// Resign resigns the candidacy, so the next candidate leads at once, and
// campaigns no more.
func (s *gatewaySource) Resign(ctx context.Context) error {
	s.mu.Lock()
	s.resigned = true
	s.mu.Unlock()
	s.poke()
	return s.leave(ctx)
}

// Pause resigns the candidacy and campaigns no more until Resume.
func (s *gatewaySource) Pause(ctx context.Context) error {
	s.mu.Lock()
	s.paused = true
	s.mu.Unlock()
	return s.leave(ctx)
}

// Resume campaigns again with a new candidacy.
func (s *gatewaySource) Resume() {
	s.mu.Lock()
	s.paused = false
	s.mu.Unlock()
	s.poke()
}

func (s *gatewaySource) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// lastHeartbeat is when the latest candidacy's last successful heartbeat
// was sent, or the zero time.
func (s *gatewaySource) lastHeartbeat() time.Time {
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last == nil {
		return time.Time{}
	}
	return last.LastHeartbeat()
}

// alive reports whether Run runs: a candidacy runs, or the source waits
// for the application to be healthy.
func (s *gatewaySource) alive() bool { return s.running.Load() }
