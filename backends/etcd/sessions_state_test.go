package etcd

import (
	"maps"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStateFindsASessionsCandidacies: a state knows which of its
// entries are on each session's lease, by election, whether it loaded
// them (in key order: an election whose name sorts before "_elector"
// comes before the session's key) or applied them as they came, through
// a move, a cooldown and a resignation, and forgets the session when its
// key goes.
func TestStateFindsASessionsCandidacies(t *testing.T) {
	k := keys{p: "p"}
	const id, lease = "ses_abcdefghijklmnopqrstuvwx", 0x694d
	hex := leaseHex(lease)
	sess := &mvccpb.KeyValue{Key: []byte(k.session(id)), Value: []byte(mustJSON(sessionValue{Elector: 1, TokenHash: "h", TTLms: 10000})), Lease: lease, CreateRevision: 2, ModRevision: 2}
	cand := func(e string, rev int64, name string) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k.line(e) + name), Value: []byte(mustJSON(candidateValue{Elector: 1, ID: "a", TTLms: 10000, TokenHash: "h"})), Lease: lease, CreateRevision: rev, ModRevision: rev}
	}
	other := &mvccpb.KeyValue{Key: []byte(k.line("zeta") + "77"), Value: []byte(mustJSON(candidateValue{Elector: 1, ID: "b", TTLms: 10000})), Lease: 0x77, CreateRevision: 5, ModRevision: 5}
	in := func(st *state) map[string]int {
		r := st.sessionLeases[lease]
		if r == nil || st.sessions[id] != r {
			t.Fatal("the session is not known by its id and its lease")
		}
		return r.elections
	}

	st := newState(k)
	idKey := func(e string, rev int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(k.candidateID(e, "a")), Value: []byte(hex), Lease: lease, CreateRevision: rev, ModRevision: rev}
	}
	st.load([]*mvccpb.KeyValue{cand("1st", 3, hex), idKey("1st", 3), sess, idKey("zeta", 4), cand("zeta", 4, hex), other}, 5)
	if got := in(st); !maps.Equal(got, map[string]int{"1st": 1, "zeta": 1}) {
		t.Fatalf("after a load: %v", got)
	}

	ev := func(typ mvccpb.Event_EventType, kv *mvccpb.KeyValue) *clientv3.Event {
		return &clientv3.Event{Type: typ, Kv: kv}
	}
	// A move (deleted and put again under its other name), then a
	// cooldown (from the line to cooling), then a resignation.
	moved := cand("zeta", 6, hex+movedSuffix)
	st.applyRevision(6, []*clientv3.Event{ev(mvccpb.DELETE, cand("zeta", 4, hex)), ev(mvccpb.PUT, moved)}, true)
	cool := &mvccpb.KeyValue{Key: []byte(k.cooling("1st", hex)), Value: []byte(mustJSON(candidateValue{Elector: 1, ID: "a", TTLms: 10000})), Lease: lease, CreateRevision: 7, ModRevision: 7}
	st.applyRevision(7, []*clientv3.Event{ev(mvccpb.DELETE, cand("1st", 3, hex)), ev(mvccpb.PUT, cool)}, true)
	if got := in(st); !maps.Equal(got, map[string]int{"1st": 1, "zeta": 1}) {
		t.Fatalf("after a move and a cooldown: %v", got)
	}
	if got := st.onLease(lease); len(got) != 2 || got[0].election != "1st" || !got[0].st.cooling || got[1].election != "zeta" {
		t.Fatalf("onLease: %+v; want the cooling one in 1st, then zeta's", got)
	}
	st.applyRevision(8, []*clientv3.Event{ev(mvccpb.DELETE, moved)}, true)
	if got := in(st); !maps.Equal(got, map[string]int{"1st": 1}) {
		t.Fatalf("after a resignation: %v", got)
	}
	// The lease ends: its keys go in one revision, the session's with them.
	st.applyRevision(9, []*clientv3.Event{ev(mvccpb.DELETE, cool), ev(mvccpb.DELETE, sess)}, true)
	if len(st.sessions) != 0 || len(st.sessionLeases) != 0 {
		t.Fatalf("the session outlived its key: %v", st.sessions)
	}
}
