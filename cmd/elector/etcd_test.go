package main

import (
	"github.com/electorhq/elector/internal/testnet"
	"net/http"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/electorhq/elector/api"
)

// startEtcd runs a single etcd member on free loopback ports until the test
// ends and returns its client URL.
func startEtcd(t *testing.T) string {
	t.Helper()
	client := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	peer := url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
	cfg := embed.NewConfig()
	cfg.Name = "e2e"
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

// TestServeOnEtcd runs `elector serve` with backend.kind etcd against a real
// etcd: campaign, leader, resign and handover through the HTTP API.
func TestServeOnEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	c := &http.Client{Timeout: 10 * time.Second}
	base, logs, stop := startServe(t, "--backend-kind", "etcd", "--etcd-endpoints", endpoint)
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exited %d; logs:\n%s", code, logs)
		}
	}()
	tokA, term := campaignVia(t, c, base, "billing", "node-a", "10s")
	campaignVia(t, c, base, "billing", "node-b", "10s")
	if l, code := leaderVia(t, c, base, "billing"); code != http.StatusOK || l.ID != "node-a" || l.Term != term || term == 0 {
		t.Fatalf("leader: %d %+v, want node-a in term %d", code, l, term)
	}
	if code := call(t, c, http.MethodDelete, base+"/v1/elections/billing/candidates/node-a", "", http.Header{api.TokenHeader: {tokA}}, nil); code != http.StatusNoContent {
		t.Fatalf("resign: %d", code)
	}
	if l, code := leaderVia(t, c, base, "billing"); code != http.StatusOK || l.ID != "node-b" || l.Term <= term {
		t.Fatalf("leader after resign: %d %+v, want node-b after term %d", code, l, term)
	}
}
