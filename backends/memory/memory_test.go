package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Harness{
		New:      func(*testing.T) gateway.Backend { return memory.New() },
		Synctest: true,
	})
}

func TestKV(t *testing.T) {
	backendtest.RunKV(t, func(*testing.T) gateway.KV { return memory.New() })
}
