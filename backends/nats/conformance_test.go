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

// TestConformanceGroupCommit runs the suite with records synced in groups
// (commit.go), as elector serve's embedded server does; a replica shares
// its first backend's group commit, as both would read one store.
func TestConformanceGroupCommit(t *testing.T) {
	e := startServer(t, t.TempDir())
	t.Cleanup(e.Shutdown)
	backendtest.Run(t, backendtest.Harness{
		New: func(t *testing.T) gateway.Backend {
			b := open(t, e, freshConfig())
			b.startGroupCommit(e)
			if b.commit == nil {
				t.Fatal("no group commit")
			}
			return b
		},
		Replica: func(t *testing.T, b gateway.Backend) gateway.Backend {
			first := b.(*Backend)
			r := open(t, e, first.cfg)
			r.commit, r.localHead = first.commit, first.localHead
			return r
		},
	})
}
