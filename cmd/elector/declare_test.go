package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/internal/etcdtest"
)

// TestDeclareUpgradedWritesTheVersionOnce: `elector declare-upgraded`
// writes <prefix>/_elector/version on a real etcd, says so, and run again
// changes nothing; a configuration of another backend is refused.
func TestDeclareUpgradedWritesTheVersionOnce(t *testing.T) {
	endpoint := etcdtest.Start(t, "declare")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	args := []string{"--backend-kind", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", "fleet", "--log-level", "warn"}
	declare := func() (mod int64) {
		t.Helper()
		var out, errs bytes.Buffer
		if code := runDeclare(context.Background(), args, &out, &errs); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		if want := "declared in fleet/_elector/version: every replica on this prefix runs data version 2 or later\n"; out.String() != want {
			t.Fatalf("printed %q, want %q", out.String(), want)
		}
		got, err := cli.Get(context.Background(), "fleet/_elector/version")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Kvs) != 1 {
			t.Fatal("no version key after the declaration")
		}
		var v struct{ Min int }
		if err := json.Unmarshal(got.Kvs[0].Value, &v); err != nil || v.Min != 2 {
			t.Fatalf("version key %s (%v), want min 2", got.Kvs[0].Value, err)
		}
		return got.Kvs[0].ModRevision
	}
	first := declare()
	if again := declare(); again != first {
		t.Errorf("a second declaration wrote the key again (mod revision %d, then %d)", first, again)
	}

	var out, errs bytes.Buffer
	if code := runDeclare(context.Background(), []string{"--backend-kind", "memory"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), `backend.kind is "memory"`) {
		t.Errorf("on the memory backend: exit %d, %q", code, errs.String())
	}
	if code := runDeclare(context.Background(), []string{"--backend-kind", "etcd", "extra"}, &out, &errs); code != 2 {
		t.Errorf("with an argument: exit %d", code)
	}
}
