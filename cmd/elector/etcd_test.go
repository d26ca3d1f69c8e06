package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/etcdtest"
	"github.com/electorhq/elector/internal/testnet"
)

// TestServeOnEtcd runs `elector serve --config configs/etcd-local.yaml`
// against a real etcd (its endpoint given as a flag, as this etcd does not
// listen on etcd's default port): campaign, leader, resign and handover
// through the HTTP API.
func TestServeOnEtcd(t *testing.T) {
	endpoint := etcdtest.Start(t, "e2e")
	config, err := filepath.Abs(filepath.Join("..", "..", "configs", "etcd-local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	base, logs, stop := startServe(t, "--config", config, "--etcd-endpoints", endpoint)
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

// TestServeOnEtcdTellsARevokedCandidate revokes a follower's lease behind
// `elector serve`'s back, right after a heartbeat etcd answered, as a
// frozen etcd leader that resumes does: the next heartbeat is 404
// candidate-not-found (campaign again) with "revoked" saying when the
// candidacy ended and when it should have.
func TestServeOnEtcdTellsARevokedCandidate(t *testing.T) {
	endpoint := etcdtest.Start(t, "revoked")
	c := &http.Client{Timeout: 10 * time.Second}
	base, logs, stop := startServe(t, "--backend-kind", "etcd", "--etcd-endpoints", endpoint)
	defer func() {
		if code := stop(); code != 0 {
			t.Errorf("serve exited %d; logs:\n%s", code, logs)
		}
	}()
	campaignVia(t, c, base, "billing", "node-a", "10s")
	tokB, _ := campaignVia(t, c, base, "billing", "node-b", "10s")
	beat := base + "/v1/elections/billing/candidates/node-b/heartbeat"
	if code := call(t, c, http.MethodPut, beat, "", http.Header{api.TokenHeader: {tokB}}, nil); code != http.StatusOK {
		t.Fatalf("heartbeat: %d", code)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	id, err := cli.Get(ctx, "elector/_elector/ids/billing/node-b")
	if err != nil || len(id.Kvs) != 1 {
		t.Fatalf("id key of node-b: %v %v", id, err)
	}
	lease, err := strconv.ParseInt(string(id.Kvs[0].Value), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(lease)); err != nil {
		t.Fatal(err)
	}
	var p struct {
		Type    string
		Revoked struct {
			At        time.Time `json:"at"`
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	if code := call(t, c, http.MethodPut, beat, "", http.Header{api.TokenHeader: {tokB}}, &p); code != http.StatusNotFound ||
		p.Type != api.ProblemTypePrefix+"candidate-not-found" || !p.Revoked.ExpiresAt.After(p.Revoked.At.Add(5*time.Second)) {
		t.Fatalf("heartbeat after the revocation: %d %+v; want 404 candidate-not-found saying it was revoked early", code, p)
	}
}

// TestServeOnEtcdWithNothingListening: serve starts, warns naming the
// endpoint it cannot reach, and a read answers 503 backend-unavailable
// once its deadline (api.ReadTimeout) passes, saying so, rather than
// after the etcd client's longer request timeout.
func TestServeOnEtcdWithNothingListening(t *testing.T) {
	endpoint := testnet.FreeAddr(t)
	base, logs, stop := startServe(t, "--backend-kind", "etcd", "--etcd-endpoints", endpoint, "--etcd-dial-timeout", "1s", "--etcd-request-timeout", "30s")
	defer stop()
	if !strings.Contains(logs.String(), `"msg":"etcd does not answer at `+endpoint+`: requests get 503 backend-unavailable until it does"`) {
		t.Fatalf("no warning naming %s:\n%s", endpoint, logs)
	}
	var p struct{ Type, Detail string }
	c := &http.Client{Timeout: time.Minute}
	if code := call(t, c, http.MethodGet, base+"/v1/elections/billing/leader", "", nil, &p); code != http.StatusServiceUnavailable ||
		p.Type != api.ProblemTypePrefix+"backend-unavailable" || !strings.Contains(p.Detail, "did not answer within "+api.ReadTimeout.String()) {
		t.Fatalf("leader: %d %+v; want 503 backend-unavailable after the read deadline", code, p)
	}
}
