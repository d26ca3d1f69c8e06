package soak

import (
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/electorhq/elector/internal/testnet"
)

// startEtcd runs one etcd member in the test process, on free loopback
// ports and a temp data dir, until the test ends, and returns its client
// URL.
func startEtcd(t *testing.T) string {
	t.Helper()
	client := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	peer := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	cfg := embed.NewConfig()
	cfg.Name = "soak"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	// No fsync: the soak injects faults into the gateways, not into etcd,
	// which is never killed here; fsync would only slow a shared machine.
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); <-e.Server.StopNotify() })
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30s")
	}
	return client.String()
}
