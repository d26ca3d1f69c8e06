package gateway

import (
	"context"
	"fmt"
	"time"
)

// CatchUpReporter is the role of a Backend that tells whether the copy it
// serves reads from (a watch-fed cache) has caught up with the store. The
// readiness probe asks it; a backend that reads the store itself (memory)
// is always caught up and answers nil.
type CatchUpReporter interface {
	// CaughtUp returns nil when the cache reflects the backend, else an
	// error saying how far behind it is (wrapping ErrUnavailable).
	CaughtUp(ctx context.Context) error
}

// hubLagAllowance is how long the hub may take to receive the backend's
// latest write before the replica counts as behind: writes in flight are
// not lag, a watch stuck for a second is.
const hubLagAllowance = time.Second

// CaughtUp reports whether this replica's watches have caught up: the
// backend's cache, and the event hub once Run has started it, which must
// reach the backend's head within a second. Errors wrap ErrUnavailable.
func (g *Gateway) CaughtUp(ctx context.Context) error {
	if err := g.b.CaughtUp(ctx); err != nil {
		return err
	}
	if !g.hub.hasStarted() {
		return nil // Watch goes to the backend itself
	}
	return g.hub.caughtUp(ctx)
}

// hasStarted reports whether the hub ever followed the backend.
func (h *hub) hasStarted() bool {
	select {
	case <-h.started:
		return true
	default:
		return false
	}
}

// caughtUp waits up to hubLagAllowance for the hub to receive the
// backend's head. Errors wrap ErrUnavailable.
func (h *hub) caughtUp(ctx context.Context) error {
	h.mu.RLock()
	ready := h.ready
	h.mu.RUnlock()
	if !ready {
		return fmt.Errorf("gateway: event hub is not following the backend: %w", ErrUnavailable)
	}
	target, err := h.headPosition(ctx)
	if err != nil {
		return fmt.Errorf("gateway: event hub: %w: %w", ErrUnavailable, err)
	}
	deadline := time.NewTimer(hubLagAllowance)
	defer deadline.Stop()
	for {
		h.mu.RLock()
		head, changed := h.head, h.changed
		h.mu.RUnlock()
		if head.Compare(target) >= 0 {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("gateway: event hub at %s, backend at %s: %w", head, target, ErrUnavailable)
		case <-ctx.Done():
			return fmt.Errorf("gateway: event hub at %s, backend at %s: %w", head, target, ErrUnavailable)
		}
	}
}
