// Package etcdtest runs a real etcd member inside a test process, for the
// tests that run `elector serve` (or several) against etcd: no binary to
// install, free loopback ports, a temp data dir, stopped when the test
// ends.
package etcdtest

import (
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/electorhq/elector/internal/testnet"
)

// Start runs one etcd member named name until t ends and returns its
// client URL. It writes without fsync: these tests fault the gateways,
// never etcd, and fsync would only slow a shared machine.
func Start(t testing.TB, name string) string {
	t.Helper()
	client := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	peer := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
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
