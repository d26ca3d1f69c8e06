package etcd_test

import (
	"testing"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestConformanceSingleMember(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	backendtest.Run(t, backendtest.Harness{
		New:     func(t *testing.T) gateway.Backend { return newBackend(t, ms, "elector") },
		Replica: func(t *testing.T, _ gateway.Backend) gateway.Backend { return newBackend(t, ms, "elector") },
		// Fewer than the default 100: on a loaded machine each candidate then
		// acts more often and the leader changes often enough to be tested.
		Candidates: 50,
	})
	// On the same member, beside the elections: the KV must not disturb them.
	t.Run("KV", func(t *testing.T) {
		backendtest.RunKV(t, func(t *testing.T) gateway.KV { return newBackend(t, ms, "elector") })
	})
}
