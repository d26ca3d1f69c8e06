package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// TestWriteLosingEveryAttemptGivesUpContended: a settings change whose
// transaction another replica's write of the same settings beats before
// each commit (lowering the holders compares the settings it read) gives
// up after gateway.Conflicts.Attempts attempts with gateway.ErrContended,
// and the settings stay as the other replica wrote them.
func TestWriteLosingEveryAttemptGivesUpContended(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	b := newBackend(t, ms, "contended")
	other := newBackend(t, ms, "contended")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := "busy"
	if _, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Minute, Holders: 2}); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	race := &hookKV{key: "/settings/" + e, commit: func(k *hookKV, txn clientv3.Txn) (*clientv3.TxnResponse, error) {
		attempts++
		if _, err := other.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Duration(attempts) * time.Second, Holders: 2}); err != nil {
			return nil, err
		}
		return txn.Commit()
	}}
	if err := b.WrapKV(ctx, func(kv clientv3.KV) clientv3.KV { race.KV = kv; return race }); err != nil {
		t.Fatal(err)
	}
	_, err := b.Configure(ctx, e, gateway.Settings{ErrorCooldown: time.Hour, Holders: 1})
	if !errors.Is(err, gateway.ErrContended) {
		t.Fatalf("Configure = %v, want ErrContended", err)
	}
	if attempts != gateway.Conflicts.Attempts {
		t.Fatalf("%d attempts, want %d", attempts, gateway.Conflicts.Attempts)
	}
	el, err := other.Election(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if el.Settings.Holders != 2 || el.Settings.ErrorCooldown != time.Duration(attempts)*time.Second {
		t.Fatalf("settings %+v, want the other replica's last", el.Settings)
	}
}
