package metrics

import (
	"context"
	"time"

	"github.com/electorhq/elector/gateway"
)

// The optional abilities of a backend, as bits.
const (
	hasRunner = 1 << iota
	hasPinger
	hasKV
	hasCatchUp
)

// withAbilities returns ib with the optional abilities of b (Runner,
// Pinger, KV, CatchUpReporter) and no others: the Gateway finds them by type
// assertion, so the decorator must neither hide one b has nor claim one it
// lacks. Each combination is a struct embedding exactly the abilities b has;
// a new ability doubles the cases (and its test in backend_test.go).
func withAbilities(ib *instrumented, b gateway.Backend) gateway.Backend {
	r, isRunner := b.(gateway.Runner)
	p, kv, cu := &instrumentedPinger{ib}, &instrumentedKV{ib}, &instrumentedCatchUp{ib}
	mask := 0
	if isRunner {
		mask |= hasRunner
	}
	if _, ok := b.(gateway.Pinger); ok {
		mask |= hasPinger
	}
	if _, ok := b.(gateway.KV); ok {
		mask |= hasKV
	}
	if _, ok := b.(gateway.CatchUpReporter); ok {
		mask |= hasCatchUp
	}
	switch mask {
	case hasRunner | hasPinger | hasKV | hasCatchUp:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
			*instrumentedKV
			*instrumentedCatchUp
		}{ib, r, p, kv, cu}
	case hasPinger | hasKV | hasCatchUp:
		return struct {
			*instrumented
			*instrumentedPinger
			*instrumentedKV
			*instrumentedCatchUp
		}{ib, p, kv, cu}
	case hasRunner | hasKV | hasCatchUp:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedKV
			*instrumentedCatchUp
		}{ib, r, kv, cu}
	case hasKV | hasCatchUp:
		return struct {
			*instrumented
			*instrumentedKV
			*instrumentedCatchUp
		}{ib, kv, cu}
	case hasRunner | hasPinger | hasCatchUp:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
			*instrumentedCatchUp
		}{ib, r, p, cu}
	case hasPinger | hasCatchUp:
		return struct {
			*instrumented
			*instrumentedPinger
			*instrumentedCatchUp
		}{ib, p, cu}
	case hasRunner | hasCatchUp:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedCatchUp
		}{ib, r, cu}
	case hasCatchUp:
		return struct {
			*instrumented
			*instrumentedCatchUp
		}{ib, cu}
	case hasRunner | hasPinger | hasKV:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
			*instrumentedKV
		}{ib, r, p, kv}
	case hasPinger | hasKV:
		return struct {
			*instrumented
			*instrumentedPinger
			*instrumentedKV
		}{ib, p, kv}
	case hasRunner | hasKV:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedKV
		}{ib, r, kv}
	case hasKV:
		return struct {
			*instrumented
			*instrumentedKV
		}{ib, kv}
	case hasRunner | hasPinger:
		return struct {
			*instrumented
			gateway.Runner
			*instrumentedPinger
		}{ib, r, p}
	case hasPinger:
		return struct {
			*instrumented
			*instrumentedPinger
		}{ib, p}
	case hasRunner:
		return struct {
			*instrumented
			gateway.Runner
		}{ib, r}
	}
	return ib
}

// instrumentedCatchUp passes gateway.CatchUpReporter through; use it only
// over a CatchUpReporter. It is a readiness check, not an operation, so it
// is not timed.
type instrumentedCatchUp struct{ i *instrumented }

// CaughtUp implements gateway.CatchUpReporter.
func (c *instrumentedCatchUp) CaughtUp(ctx context.Context) error {
	return c.i.b.(gateway.CatchUpReporter).CaughtUp(ctx)
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
	_ gateway.Pinger          = (*instrumentedPinger)(nil)
	_ gateway.KV              = (*instrumentedKV)(nil)
	_ gateway.CatchUpReporter = (*instrumentedCatchUp)(nil)
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
