package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/etcdtest"
)

// TestServeOnEtcd runs `elector serve` with backend.kind etcd against a real
// etcd: campaign, leader, resign and handover through the HTTP API.
func TestServeOnEtcd(t *testing.T) {
	endpoint := etcdtest.Start(t, "e2e")
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
