package gateway

import "context"

// CatchUpReporter is implemented by backends that serve reads from a
// watch-fed cache and can tell whether it has caught up with the backend.
// The readiness probe asks it; backends without it are not asked.
type CatchUpReporter interface {
	// CaughtUp returns nil when the cache reflects the backend, else an
	// error saying how far behind it is (wrapping ErrUnavailable).
	CaughtUp(ctx context.Context) error
}

// CaughtUp reports whether the backend's watch has caught up. known is
// false when the backend cannot tell (it does not implement
// CatchUpReporter).
func (g *Gateway) CaughtUp(ctx context.Context) (known bool, err error) {
	c, ok := g.b.(CatchUpReporter)
	if !ok {
		return false, nil
	}
	return true, c.CaughtUp(ctx)
}
