package etcd_test

import (
	"testing"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestConformanceSingleMember(t *testing.T) {
	ms := startCluster(t, 1)
	backendtest.Run(t, backendtest.Harness{
		New:     func(t *testing.T) gateway.Backend { return newBackend(t, ms, "elector") },
		Replica: func(t *testing.T, _ gateway.Backend) gateway.Backend { return newBackend(t, ms, "elector") },
	})
}
