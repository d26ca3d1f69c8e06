package etcd_test

import (
	"testing"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestConformanceSingleMember(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	// Fewer than the default 100 candidates: on a loaded machine each
	// acts more often and the leader changes often enough to be tested.
	backendtest.Run(t, conformance(ms, 50, 0))
	// On the same member, beside the elections: the KV must not disturb them.
	t.Run("KV", func(t *testing.T) {
		backendtest.RunKV(t, func(t *testing.T) gateway.KV { return newBackend(t, ms, "elector") })
	})
}

// modelOpsBeside is the model test's number of steps in the harnesses
// beside the single member's (three members, an installed etcd): the same
// backend code over other members, so fewer steps, for CI's time.
const modelOpsBeside = 60

// conformance is the conformance suite's harness over members ms, with
// the differences from gateway.Record that the model test allows etcd
// (see backendtest.Harness): a pending transfer moves keys to the back of
// the line, ranks kept (the package doc, Transfers and priorities); a
// leader's promise lapses on the replicas' clocks, not with its lease
// (The leader's promise); a holder's expiry reaches the lead record only once its slot frees, so a
// begin in another slot before then does not name it, and no slot is
// filled past a transfer's target while it waits (fill).
func conformance(ms []*member, candidates, modelOps int) backendtest.Harness {
	return backendtest.Harness{
		New:                       func(t *testing.T) gateway.Backend { return newBackend(t, ms, "elector") },
		Replica:                   func(t *testing.T, _ gateway.Backend) gateway.Backend { return newBackend(t, ms, "elector") },
		Candidates:                candidates,
		ModelOps:                  modelOps,
		TransferMovesFollowers:    true,
		ExpiryHolds:               true,
		BeginSkipsHeldPrevious:    true,
		TransferTargetBlocksSlots: true,
	}
}

// TestConformanceDeclaredUpgraded is the suite with every replica declared
// to run this version (DeclareUpgraded), so campaigns into empty elections
// acknowledge their candidate in their own transaction (the lead record
// with term 0).
func TestConformanceDeclaredUpgraded(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	h := conformance(ms, 50, modelOpsBeside)
	declared := func(t *testing.T) gateway.Backend {
		b := newBackend(t, ms, "elector")
		if err := b.DeclareUpgraded(t.Context()); err != nil {
			t.Fatal(err)
		}
		return b
	}
	h.New = declared
	h.Replica = func(t *testing.T, _ gateway.Backend) gateway.Backend { return declared(t) }
	backendtest.Run(t, h)
}
