package webhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/electorhq/elector/gateway"
)

// errClaimLost: another replica took the endpoint, or it was deleted; the
// worker stops.
var errClaimLost = errors.New("webhooks: claim lost")

// claim is a worker's hold on an endpoint's cursor record. Every write is a
// compare-and-set on the revision the claim last wrote, so a replica whose
// claim expired and was taken fails its next write and stops.
type claim struct {
	s   *Service
	key string

	mu   sync.Mutex
	rec  cursorRecord
	rev  uint64
	last string // the cursor to write next; ahead of rec.Last between writes
	lost bool
}

// cursor is the id of the last event the worker is done with.
func (c *claim) cursor() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// setCursor moves the cursor in memory; the next write persists it.
func (c *claim) setCursor(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = id
}

// write persists the cursor and extends the claim (or, with release, gives
// it up). Errors: errClaimLost, the KV's.
func (c *claim) write(ctx context.Context, release bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost {
		return errClaimLost
	}
	rec := c.rec
	rec.Last = c.last
	if release {
		rec.Replica, rec.Until = "", time.Time{}
	} else {
		rec.Until = c.s.now().Add(c.s.cfg.ClaimTTL)
	}
	rev, err := updateJSON(ctx, c.s.kv, c.key, rec, c.rev)
	if errors.Is(err, gateway.ErrRevisionMismatch) {
		c.lost = true
		return fmt.Errorf("%w: %s", errClaimLost, c.key)
	}
	if err != nil {
		return err
	}
	c.rec, c.rev = rec, rev
	return nil
}

// holds reports whether the claim is still good for longer than d, the
// longest an attempt about to start can take. An attempt may only start
// when it holds: another replica takes the endpoint only once the claim
// has run out, so an attempt that ends before then cannot overlap the
// other replica's attempts on the same endpoint.
func (c *claim) holds(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lost && c.rec.Until.After(c.s.now().Add(d))
}

// holdFor makes sure the claim holds for longer than d (see holds),
// extending it now if it runs out sooner. Errors: errClaimLost, the KV's.
func (c *claim) holdFor(ctx context.Context, d time.Duration) error {
	if c.holds(d) {
		return nil
	}
	if err := c.write(ctx, false); err != nil {
		return err
	}
	if !c.holds(d) {
		// Only a ClaimTTL shorter than d gets here, which Validate and
		// withDefaults rule out; never start the attempt regardless.
		return fmt.Errorf("%w: %s: the claim lasts less than an attempt", errClaimLost, c.key)
	}
	return nil
}

// keep renews the claim every ClaimTTL/3 until ctx ends; it calls lost
// and returns if the claim is lost.
func (c *claim) keep(ctx context.Context, lost func()) {
	t := time.NewTicker(c.s.cfg.ClaimTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := c.write(ctx, false)
			if errors.Is(err, errClaimLost) {
				lost()
				return
			}
			// Other errors: the backend is unavailable; the claim lasts
			// until Until, and holdFor stops new attempts that could
			// outlast it.
		}
	}
}
