package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

// getLeader GETs url and returns the status and the leader's id of a
// leader document (empty for any other answer).
func getLeader(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, "", err
	}
	var doc struct{ ID string }
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &doc); err != nil {
			return 0, "", fmt.Errorf("GET %s: %s: %w", url, body, err)
		}
	}
	return res.StatusCode, doc.ID, nil
}

// A local read (consistency=local) answers from the replica's copy as it
// is: through a replica whose watch is held behind a deposition made on
// another replica, it still shows the deposed leader, at once, where a
// linearizable read waits for the copy to catch up. Once the copy has
// stopped following etcd (its only member gone), a local read is served
// as a linearizable one, and fails, rather than answer from the copy.
func TestLocalReadsAnswerFromTheCopyWhileItFollowsEtcd(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	short := func(c *etcd.Config) { c.RequestTimeout = time.Second }
	a := newBackend(t, ms, "local", short)
	other := newBackend(t, ms, "local", short)
	run(t, a)
	run(t, other)
	ctx := context.Background()
	srv := httptest.NewServer(api.New(gateway.New(a, gateway.Config{Logger: quiet}), api.Config{Logger: quiet}))
	defer srv.Close()
	leader := srv.URL + "/v1/elections/e/leader"

	th := gateway.HashToken(gateway.NewToken())
	if _, err := a.Campaign(ctx, "e", gateway.Candidacy{ID: "x", TTL: 30 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Election(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the copy following etcd", a.Following)
	if status, id, err := getLeader(ctx, leader+"?consistency=local"); err != nil || status != http.StatusOK || id != "x" {
		t.Fatalf("local read: %d %q %v, want x leading", status, id, err)
	}

	release := a.HoldCache()
	defer release()
	if _, err := other.ReportError(ctx, "e", "x", th, "deposed elsewhere"); err != nil {
		t.Fatal(err)
	}
	// The linearizable read waits for the held copy; the local one does not.
	lin := make(chan int, 1)
	go func() {
		status, _, _ := getLeader(ctx, leader)
		lin <- status
	}()
	for _, q := range []string{"?consistency=local", "?consistency=local&other=1"} {
		status, id, err := getLeader(ctx, leader+q)
		if err != nil || status != http.StatusOK || id != "x" {
			t.Fatalf("local read%s through a replica held behind: %d %q %v, want the copy as it is (x leading)", q, status, id, err)
		}
	}
	select {
	case status := <-lin:
		t.Fatalf("a linearizable read through a replica held behind a deposition answered %d", status)
	default:
	}
	release()
	if status := <-lin; status != http.StatusNotFound {
		t.Fatalf("linearizable read once caught up: %d, want 404 no-leader", status)
	}
	eventually.NoError(t, 10*time.Second, "a local read showing the deposition", func() error {
		status, id, err := getLeader(ctx, leader+"?consistency=local")
		if err == nil && status != http.StatusNotFound {
			err = fmt.Errorf("%d %q, want 404", status, id)
		}
		return err
	})

	// Without a member, the copy stops following; a local read is then a
	// linearizable one, which cannot be served.
	ms[0].stop()
	eventually.True(t, 10*time.Second, "the copy no longer following etcd", func() bool { return !a.Following() })
	if status, id, err := getLeader(ctx, leader+"?consistency=local"); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("local read with etcd gone: %d %q %v, want 503", status, id, err)
	}
}
