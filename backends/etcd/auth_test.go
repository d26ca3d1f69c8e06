package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
)

// TestPasswordAuth runs elector as an etcd user whose role covers only
// its prefix, and checks that wrong credentials make it unavailable.
func TestPasswordAuth(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	admin, err := clientv3.New(clientv3.Config{Endpoints: endpoints(ms), DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx := context.Background()
	steps := []func() error{
		func() error { _, err := admin.RoleAdd(ctx, "root"); return err },
		func() error { _, err := admin.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.RoleAdd(ctx, "elector"); return err },
		func() error {
			_, err := admin.RoleGrantPermission(ctx, "elector", "elector/", clientv3.GetPrefixRangeEnd("elector/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := admin.UserAdd(ctx, "elector", "s3cret"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "elector", "elector"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}

	b := newBackend(t, ms, "elector", func(c *etcd.Config) { c.Username, c.Password = "elector", "s3cret" })
	run(t, b)
	th := gateway.HashToken(gateway.NewToken())
	st, err := b.Campaign(ctx, "auth", gateway.Candidacy{ID: "a", TTL: 5 * time.Second, TokenHash: th}, gateway.DefaultSettings())
	if err != nil || st.Candidate.State != gateway.StateLeader {
		t.Fatalf("campaign as user elector: %+v, %v", st, err)
	}
	if _, err := b.Heartbeat(ctx, "auth", "a", th); err != nil {
		t.Fatalf("heartbeat as user elector: %v", err)
	}
	if err := b.Resign(ctx, "auth", "a", th); err != nil {
		t.Fatalf("resign as user elector: %v", err)
	}
	if err := b.Ping(ctx); err != nil {
		t.Fatalf("ping as user elector: %v", err)
	}

	_, err = etcd.New(etcd.Config{Endpoints: endpoints(ms), Username: "elector", Password: "wrong", DialTimeout: time.Second})
	if !errors.Is(err, gateway.ErrUnavailable) {
		t.Fatalf("connect with a wrong password: %v, want ErrUnavailable", err)
	}
}
