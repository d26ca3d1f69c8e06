// Package etcdtest runs real etcd for tests: one member inside the test
// process (Start), for the tests that run `elector serve` against etcd
// with nothing to install; or a cluster of members as processes of their
// own (StartCluster), of the etcd installed on the machine (System) or of
// the version in go.mod built from the module (BuildModule), which a test
// can stop with SIGSTOP, kill and restart. Free loopback ports, temporary
// data directories, stopped when the test ends.
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
