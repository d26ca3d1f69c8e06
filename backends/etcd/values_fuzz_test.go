package etcd

import (
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// fuzzKinds are the keys of election "e" under prefix "p" that a fuzzed
// change writes or deletes, by the change's kind byte.
var fuzzKinds = []func(k keys) string{
	func(k keys) string { return k.settings("e") },
	func(k keys) string { return k.lead("e") },
	func(k keys) string { return k.mark("e") },
	func(k keys) string { return k.candidacy("e", "a") },
	func(k keys) string { return k.candidacy("e", "b") },
	func(k keys) string { return k.candidacy("e", "c") },
	func(k keys) string { return k.cooling("e", "a") },
	func(k keys) string { return k.promise("e") },
	func(k keys) string { return k.promiseOf("e", "10") },
	func(k keys) string { return k.revoked("e", "a") },
	func(k keys) string { return k.candidateID("e", "a") },
	func(k keys) string { return k.handoverMark("e") },
	func(k keys) string { return k.handoverMarkOf("e", "10") },
	func(k keys) string { return k.cooldownMark("e", "a") },
	func(k keys) string { return k.version() },
}

// FuzzReplicaTakesAnyValues: whatever the keys of an election hold (values
// written by a native etcd client, by an elector older or newer than this
// one, or damaged in the store), a replica applies them to its copy,
// derives the events, the view, the snapshot and the reconcilers' plan
// from them, and answers a candidate's standing, without panicking. The
// election starts as a replica would find it (settings, a holder a of
// term 10 with its promise, b and c in line); each input then writes (or,
// with an empty value, deletes) three keys, one revision each.
func FuzzReplicaTakesAnyValues(f *testing.F) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cand := func(id string, prio int) []byte {
		return []byte(mustJSON(candidateValue{Elector: 1, ID: id, TTLms: 10000, TokenHash: "h" + id, Priority: prio, At: t0}))
	}
	lead := []byte(mustJSON(*one(10*time.Second, "")))
	ended := []byte(mustJSON(*one(10*time.Second, gateway.ReasonResigned)))
	two := []byte(mustJSON(settingsValue{ErrorCooldownMs: 1000, HandoverDelayMs: 500, Preempt: true, Holders: 2, At: t0}))
	f.Add(uint8(1), lead, uint8(3), cand("a", 0), uint8(4), cand("b", 5))
	f.Add(uint8(1), ended, uint8(0), two, uint8(3), []byte{})
	f.Add(uint8(0), []byte(`{"holders":100000000,"error_cooldown_ms":-1}`), uint8(1), []byte(`[{"term":1,"key":"zz"}]`), uint8(2), []byte(`{"key":"b","reason":"transfer"}`))
	f.Add(uint8(3), []byte("native"), uint8(7), []byte(`{"term":10,"key":"a","ttl_ms":-5}`), uint8(10), []byte("b"))
	f.Add(uint8(6), cand("a", -3), uint8(13), []byte(`{}`), uint8(14), []byte(`{"min":9}`))
	f.Add(uint8(1), []byte(`{"term":10,"slots":[{"term":10,"key":"a","id":"a"},{"term":10,"key":"a","id":"a"}],"transfer":{"to":"b"}}`), uint8(4), []byte(`{"elector":1,"id":"a","rank":-9}`), uint8(11), []byte(`{"term":4}`))
	f.Fuzz(func(t *testing.T, k1 uint8, v1 []byte, k2 uint8, v2 []byte, k3 uint8, v3 []byte) {
		k := keys{p: "p"}
		st := newState(k)
		at := t0
		st.clock = func() time.Time { return at }
		rev := int64(1)
		change := func(key string, val []byte, lease int64) *clientv3.Event {
			rev++
			kv := &mvccpb.KeyValue{Key: []byte(key), Value: val, CreateRevision: rev, ModRevision: rev, Lease: lease}
			if len(val) == 0 {
				return &clientv3.Event{Type: mvccpb.DELETE, Kv: kv}
			}
			return &clientv3.Event{Type: mvccpb.PUT, Kv: kv}
		}
		apply := func(evs ...*clientv3.Event) {
			st.applyRevision(rev, evs, true)
		}
		apply(change(k.settings("e"), []byte(mustJSON(settingsValue{ErrorCooldownMs: 1000, At: t0})), 0))
		apply(change(k.candidacy("e", "a"), cand("a", 0), 0xa), change(k.candidateID("e", "a"), []byte("a"), 0xa))
		apply(change(k.lead("e"), lead, 0))
		apply(change(k.promiseOf("e", "10"), []byte(mustJSON(promiseValue{Term: 10, Key: "a", TTLms: 10000, At: t0})), 0))
		apply(change(k.candidacy("e", "b"), cand("b", 0), 0xb), change(k.candidacy("e", "c"), cand("c", 1), 0xc))

		now := func() time.Time { return at }
		b := &Backend{keys: k, leases: newLeaseBook(), now: now, mono: clock{now: now}}
		look := func(step string) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%s: %v\n%s", step, r, debug.Stack())
				}
			}()
			v := st.view("e")
			b.plan(v, at, at)
			b.snapshot(v, revCursor(rev), at)
			st.leaderView("e")
			for _, id := range []string{"a", "b", "c", "native", "zz"} {
				st.standing("e", id)
			}
			st.names()
		}
		look("the election as found")
		for i, c := range []struct {
			kind uint8
			val  []byte
		}{{k1, v1}, {k2, v2}, {k3, v3}} {
			key := fuzzKinds[int(c.kind)%len(fuzzKinds)](k)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("change %d (%s = %q): %v", i+1, key, c.val, r)
					}
				}()
				apply(change(key, c.val, int64(0xa+i)))
			}()
			at = at.Add(11 * time.Second) // past every promise of the seeds
			look(fmt.Sprintf("after change %d (%s = %q)", i+1, key, c.val))
		}
	})
}
