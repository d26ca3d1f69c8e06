package nats

import (
	"testing"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/gateway/backendtest"
)

func TestConformanceSingleServer(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) gateway.Backend { return open(t, e, freshConfig()) },
		Replica: func(t *testing.T, b gateway.Backend) gateway.Backend {
			return open(t, e, b.(*Backend).cfg)
		},
	})
}
