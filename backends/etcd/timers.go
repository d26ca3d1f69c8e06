package etcd

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Handover delays and error cooldowns end when etcd says so, not when a
// replica's clock says so (see "Error cooldown and handover delay" in the
// package doc). Each running timer has a marker key on a lease of its
// own, whose TTL is the timer's length rounded up to whole seconds:
//
//	p/_elector/handover/<election>            {"term":41,"until":"…"}
//	p/_elector/handover/<election>/<term>     the same, per slot (the lead record's list form)
//	p/_elector/cooldown/<election>/<lease-hex> {"until":"…"}
//
// It is written in the transaction that starts the timer, and the record
// that the timer belongs to (the lead record's slot, the cooling key) says
// "timed": true in that same transaction. So at any revision, a timed
// record whose marker key is absent has a marker that etcd deleted when
// its lease expired: the timer has ended.

// markerValue is the value of a timer's marker key: the term of the
// holdership whose expiry started a handover delay (0 for a cooldown)
// and the recorded end, as shown to users.
type markerValue struct {
	Term  uint64    `json:"term,omitempty"`
	Until time.Time `json:"until"`
}

// timerPut is a marker key an action writes on a lease it grants first.
type timerPut struct {
	key   string
	value markerValue
	ttl   time.Duration
}

// markerSecs is a marker lease's TTL: ttl rounded up to whole seconds, at
// least one. etcd raises a TTL below its minimum lease TTL, never lowers
// one, so a marker never expires before ttl has passed.
func markerSecs(ttl time.Duration) int64 {
	return max(int64((ttl+time.Second-1)/time.Second), 1)
}

// grantMarker grants the lease of a marker of ttl and returns the write
// of t's key on it. The lease is granted before the transaction that
// starts the timer, so it expires no sooner than ttl after the timer's
// cause (an expiry, an error report) was seen. The caller revokes the
// lease only when its transaction certainly was not applied (notApplied).
func (b *Backend) grantMarker(ctx context.Context, t timerPut) (clientv3.LeaseID, clientv3.Op, error) {
	return b.grantLease(ctx, t.key, mustJSON(t.value), t.ttl)
}

// grantLease grants a lease of ttl (rounded up to whole seconds, at
// least one) and returns the write of key with value on it.
func (b *Backend) grantLease(ctx context.Context, key, value string, ttl time.Duration) (clientv3.LeaseID, clientv3.Op, error) {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	g, err := b.cli.Grant(rctx, markerSecs(ttl))
	if err != nil {
		return 0, clientv3.Op{}, err
	}
	return g.ID, clientv3.OpPut(key, value, clientv3.WithLease(g.ID)), nil
}

// notApplied reports whether a transaction that would have written a
// marker certainly did not: its comparisons failed, or etcd refused it
// because a lease it puts a key on has expired. Only then may the caller
// revoke the marker's lease. Any other error leaves it unknown whether
// etcd applied the transaction (a request timeout after etcd committed
// it, a connection cut); revoking the lease would then delete a marker
// that may be running and end its timer at once, whereas left alone the
// lease expires after the timer's length.
func notApplied(resp *clientv3.TxnResponse, err error) bool {
	if err != nil {
		return leaseGone(err)
	}
	return !resp.Succeeded
}

// handoverKey is the key of the marker of the handover delay of slot term
// in the lead record l that the transaction starting it writes: one per
// election in the record's one-holder form, one per term in its list form
// (see termName).
func (b *Backend) handoverKey(election string, l leadValue, term uint64) string {
	_, one := l.one()
	return b.keys.handoverMarkOf(election, termName(!one, term))
}
