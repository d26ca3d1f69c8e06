package gateway

import (
	"context"
	"time"
)

// Observer is told of every call the Gateway makes to its backend: the
// operation ("campaign", "heartbeat", "resign", "report_error", "election",
// "elections", "configure", "watch", "transfer", "handover",
// "cancel_transfer", "ping", and "kv_get", "kv_create",
// "kv_update", "kv_delete", "kv_list" through the Gateway's KV), how long
// it took, and its error. Package metrics implements it; the default does
// nothing. Implementations must be fast and safe for concurrent use.
//
// Observing in the Gateway rather than by wrapping the backend keeps the
// backend's optional abilities (Runner, Header, KV, …) visible by type
// assertion, whichever the backend has.
type Observer interface {
	BackendCall(op string, d time.Duration, err error)
}

// NopObserver observes nothing.
type NopObserver struct{}

// BackendCall implements Observer.
func (NopObserver) BackendCall(string, time.Duration, error) {}

// observe reports a backend call that started at start, and notes how
// writes go for readiness (writeHealth).
func (g *Gateway) observe(op string, start time.Time, err error) {
	now := time.Now()
	g.writes.record(op, now, err)
	g.cfg.Observer.BackendCall(op, now.Sub(start), err)
}

// observedKV reports the calls of a backend's KV to an Observer.
type observedKV struct {
	kv KV
	g  *Gateway
}

var _ KV = observedKV{}

// Get implements KV.
func (o observedKV) Get(ctx context.Context, key string) (Item, error) {
	start := time.Now()
	it, err := o.kv.Get(ctx, key)
	o.g.observe("kv_get", start, err)
	return it, err
}

// Create implements KV.
func (o observedKV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	start := time.Now()
	rev, err := o.kv.Create(ctx, key, value)
	o.g.observe("kv_create", start, err)
	return rev, err
}

// Update implements KV.
func (o observedKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	start := time.Now()
	rev, err := o.kv.Update(ctx, key, value, rev)
	o.g.observe("kv_update", start, err)
	return rev, err
}

// Delete implements KV.
func (o observedKV) Delete(ctx context.Context, key string, rev uint64) error {
	start := time.Now()
	err := o.kv.Delete(ctx, key, rev)
	o.g.observe("kv_delete", start, err)
	return err
}

// List implements KV.
func (o observedKV) List(ctx context.Context, prefix string) ([]Item, error) {
	start := time.Now()
	items, err := o.kv.List(ctx, prefix)
	o.g.observe("kv_list", start, err)
	return items, err
}
