package metrics

import (
	"context"
	"time"

	"github.com/electorhq/elector/gateway"
)

// withAbilities returns ib with the optional abilities of b (Runner, Pinger,
// KV) and no others: the Gateway finds them by type assertion, so the
// decorator must neither hide one b has nor claim one it lacks. Each of the
// eight combinations is a struct embedding exactly the abilities b has.
func withAbilities(ib *instrumented, b gateway.Backend) gateway.Backend {
	r, isRunner := b.(gateway.Runner)
	_, isPinger := b.(gateway.Pinger)
	_, isKV := b.(gateway.KV)
	p := &instrumentedPinger{ib}
	kv := &instrumentedKV{ib}
	switch {
	case isRunner && isPinger && isKV:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
			*instrumentedKV
		}{ib, r, p, kv}
	case isRunner && isPinger:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
		}{ib, r, p}
	case isRunner && isKV:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedKV
		}{ib, r, kv}
	case isPinger && isKV:
		return struct {
			*instrumented
			*instrumentedPinger
			*instrumentedKV
		}{ib, p, kv}
	case isRunner:
		return struct {
			*instrumented
			gateway.Runner
		}{ib, r}
	case isPinger:
		return struct {
			*instrumented
			*instrumentedPinger
		}{ib, p}
	case isKV:
		return struct {
			*instrumented
			*instrumentedKV
		}{ib, kv}
	default:
		return ib
	}
}

// instrumentedPinger times gateway.Pinger; use it only over a Pinger.
type instrumentedPinger struct{ i *instrumented }

// Ping implements gateway.Pinger.
func (p *instrumentedPinger) Ping(ctx context.Context) error {
	start := time.Now()
	err := p.i.b.(gateway.Pinger).Ping(ctx)
	p.i.s.observe("ping", start, err)
	return err
}

// instrumentedKV times gateway.KV; use it only over a KV.
type instrumentedKV struct{ i *instrumented }

var (
	_ gateway.Pinger = (*instrumentedPinger)(nil)
	_ gateway.KV     = (*instrumentedKV)(nil)
)

func (k *instrumentedKV) kv() gateway.KV { return k.i.b.(gateway.KV) }

// Get implements gateway.KV.
func (k *instrumentedKV) Get(ctx context.Context, key string) (gateway.Item, error) {
	start := time.Now()
	it, err := k.kv().Get(ctx, key)
	k.i.s.observe("kv_get", start, err)
	return it, err
}

// Create implements gateway.KV.
func (k *instrumentedKV) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	start := time.Now()
	rev, err := k.kv().Create(ctx, key, value)
	k.i.s.observe("kv_create", start, err)
	return rev, err
}

// Update implements gateway.KV.
func (k *instrumentedKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	start := time.Now()
	rev, err := k.kv().Update(ctx, key, value, rev)
	k.i.s.observe("kv_update", start, err)
	return rev, err
}

// Delete implements gateway.KV.
func (k *instrumentedKV) Delete(ctx context.Context, key string, rev uint64) error {
	start := time.Now()
	err := k.kv().Delete(ctx, key, rev)
	k.i.s.observe("kv_delete", start, err)
	return err
}

// List implements gateway.KV.
func (k *instrumentedKV) List(ctx context.Context, prefix string) ([]gateway.Item, error) {
	start := time.Now()
	items, err := k.kv().List(ctx, prefix)
	k.i.s.observe("kv_list", start, err)
	return items, err
}
