package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
	"github.com/electorhq/elector/internal/servertest"
)

// localReads are the reads that take consistency=local, each with what
// says, in its answer, that candidate x leads election e.
var localReads = []struct {
	path  string
	leads func(doc map[string]any) bool
}{
	{"/v1/elections/e/leader", func(d map[string]any) bool { return d["id"] == "x" }},
	{"/v1/elections/e", func(d map[string]any) bool { return leaderID(d["leader"]) == "x" }},
	{"/v1/elections", func(d map[string]any) bool {
		es, _ := d["elections"].([]any)
		for _, e := range es {
			if e, _ := e.(map[string]any); e["name"] == "e" {
				return leaderID(e["leader"]) == "x"
			}
		}
		return false
	}},
	{"/v1/elections/e/candidates", func(d map[string]any) bool {
		cs, _ := d["candidates"].([]any)
		for _, c := range cs {
			if c, _ := c.(map[string]any); c["id"] == "x" {
				return c["state"] == "leader"
			}
		}
		return false
	}},
	{"/v1/elections/e/candidates/x", func(d map[string]any) bool { return d["state"] == "leader" }},
}

func leaderID(v any) any {
	l, _ := v.(map[string]any)
	return l["id"]
}

// xLeads GETs url and reports the status, and whether the answer says
// that x leads.
func xLeads(ctx context.Context, url string, leads func(map[string]any) bool) (int, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return res.StatusCode, false, err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, false, fmt.Errorf("GET %s: %s: %w", url, body, err)
	}
	return res.StatusCode, leads(doc), nil
}

// serveAPI serves the API over b on loopback until the test ends.
func serveAPI(t *testing.T, b *etcd.Backend) *httptest.Server {
	srv := httptest.NewServer(api.New(gateway.New(b, gateway.Config{Logger: quiet}), api.Config{Logger: quiet}))
	t.Cleanup(srv.Close)
	return srv
}

// servedReplica starts a replica over ms under prefix, configured by
// opts, and serves the API over it.
func servedReplica(t *testing.T, ms []*member, prefix string, opts ...func(*etcd.Config)) (*etcd.Backend, *httptest.Server) {
	t.Helper()
	b := newBackend(t, ms, prefix, opts...)
	run(t, b)
	return b, serveAPI(t, b)
}

// twoReplicas starts replicas a (configured by opts) and other over ms
// under prefix, serves the API over a, and campaigns x into election e
// through a once a's copy follows etcd; it returns the hash of x's token.
func twoReplicas(t *testing.T, ms []*member, prefix string, opts ...func(*etcd.Config)) (a, other *etcd.Backend, srv *httptest.Server, th string) {
	t.Helper()
	a, srv = servedReplica(t, ms, prefix, opts...)
	other = newBackend(t, ms, prefix)
	run(t, other)
	th = campaignX(t, a, "e")
	eventually.True(t, 10*time.Second, "the copy following etcd", a.Following)
	return a, other, srv, th
}

// campaignX campaigns candidate x into election through b, and returns its
// token's hash.
func campaignX(t *testing.T, b *etcd.Backend, election string) string {
	t.Helper()
	th := gateway.HashToken(gateway.NewToken())
	if _, err := b.Campaign(context.Background(), election, gateway.Candidacy{ID: "x", TTL: 30 * time.Second, TokenHash: th}, gateway.DefaultSettings()); err != nil {
		t.Fatal(err)
	}
	return th
}

// A local read (consistency=local) answers from the replica's copy as it
// is: through a replica whose watch is held behind a deposition made on
// another replica, every read that takes it still shows the deposed
// leader, at once, where a linearizable read cannot answer until the copy
// catches up.
func TestLocalReadsAnswerFromTheCopyWhileItFollowsEtcd(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	// A MemberTimeout far longer than the test: a held copy still counts
	// as following however slow the machine.
	patient := func(c *etcd.Config) { c.MemberTimeout = time.Minute }
	a, other, srv, th := twoReplicas(t, ms, "local", patient)
	ctx := context.Background()
	if _, err := other.Election(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	for _, r := range localReads {
		if status, leads, err := xLeads(ctx, srv.URL+r.path+"?consistency=local", r.leads); err != nil || status != http.StatusOK || !leads {
			t.Fatalf("local read of %s: %d, x leads %v, %v; want x leading", r.path, status, leads, err)
		}
	}

	release := a.HoldCache()
	defer release()
	if _, err := other.ReportError(ctx, "e", "x", th, "deposed elsewhere"); err != nil {
		t.Fatal(err)
	}
	for _, r := range localReads {
		// The linearizable read cannot answer while the copy is held
		// behind the deposition; the local one answers from the copy.
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		status, leads, err := xLeads(rctx, srv.URL+r.path, r.leads)
		cancel()
		if err == nil {
			t.Fatalf("linearizable read of %s through a replica held behind a deposition answered %d (x leads %v)", r.path, status, leads)
		}
		if status, leads, err := xLeads(ctx, srv.URL+r.path+"?consistency=local", r.leads); err != nil || status != http.StatusOK || !leads {
			t.Fatalf("local read of %s through a replica held behind: %d, x leads %v, %v; want the copy as it is (x leading)", r.path, status, leads, err)
		}
	}
	release()
	for _, r := range localReads {
		eventually.NoError(t, 10*time.Second, "a local read of "+r.path+" showing the deposition", func() error {
			status, leads, err := xLeads(ctx, srv.URL+r.path+"?consistency=local", r.leads)
			if err == nil && leads {
				err = fmt.Errorf("%d, x leads", status)
			}
			return err
		})
	}

}

// Once the copy has stopped following etcd (its only member gone), a local
// read is served as a linearizable one, which cannot answer, rather than
// from the copy.
func TestLocalReadsOfACopyCutOffFromEtcdAreNotServed(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 1)
	a, srv := servedReplica(t, ms, "cutoff")
	ctx := context.Background()
	campaignX(t, a, "e")
	eventually.True(t, 10*time.Second, "the copy following etcd", a.Following)
	leader := srv.URL + "/v1/elections/e/leader?consistency=local"
	if status, leads, err := xLeads(ctx, leader, localReads[0].leads); err != nil || status != http.StatusOK || !leads {
		t.Fatalf("local read: %d, x leads %v, %v; want x leading", status, leads, err)
	}

	ms[0].stop()
	eventually.True(t, 10*time.Second, "the copy no longer following etcd", func() bool { return !a.Following() })
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if status, _, err := xLeads(rctx, leader, localReads[0].leads); err == nil && status != http.StatusServiceUnavailable {
		t.Fatalf("local read with etcd gone: %d, want 503 or no answer", status)
	}
}

// When the member the copy's watch is on stops, the watch moves to another
// member and the copy follows etcd again: local reads go on, and show
// what is written after the stop.
func TestLocalReadsGoOnOnceTheWatchMovesToAnotherMember(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 3)
	a, srv := servedReplica(t, ms, "move")
	ctx := context.Background()
	campaign := func(election string) {
		t.Helper()
		th := gateway.HashToken(gateway.NewToken())
		eventually.NoError(t, 20*time.Second, "a campaign in "+election, func() error {
			_, err := a.Campaign(ctx, election, gateway.Candidacy{ID: "x", TTL: 30 * time.Second, TokenHash: th}, gateway.DefaultSettings())
			return err
		})
	}
	campaign("e")
	eventually.True(t, 10*time.Second, "the copy following etcd", a.Following)
	watched := stopWatchedMember(t, ms, a)
	eventually.True(t, 20*time.Second, "the watch on another member, following etcd", func() bool {
		w := a.WatchEndpoint()
		return w != "" && w != watched && a.Following()
	})
	// Written through this replica, so its copy holds it once the
	// campaign answers; a local read shows it.
	campaign("after")
	status, leads, err := xLeads(ctx, srv.URL+"/v1/elections/after/leader?consistency=local", localReads[0].leads)
	if err != nil || status != http.StatusOK || !leads {
		t.Fatalf("local read after the watch moved: %d, x leads %v, %v; want x leading", status, leads, err)
	}
}

// stopWatchedMember stops the member of ms that b's cache watches, and
// returns its endpoint.
func stopWatchedMember(t *testing.T, ms []*member, b *etcd.Backend) string {
	t.Helper()
	watched := b.WatchEndpoint()
	for _, m := range ms {
		if m.client.String() == watched {
			m.stop()
			return watched
		}
	}
	t.Fatalf("no member at %q, the watch's endpoint", watched)
	return ""
}

// When etcd has compacted past the revision the copy's watch must resume
// from, the copy loads again. Until it has, it is not following and local
// reads are not served from it; once it has, they show what was written
// meanwhile.
func TestLocalReadsResumeOnceTheCopyReloadsPastACompaction(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 3)
	var logs servertest.SyncBuffer
	a, other, srv, th := twoReplicas(t, ms, "reload", func(c *etcd.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ctx := context.Background()
	leader := srv.URL + "/v1/elections/e/leader?consistency=local"

	held, release := a.HoldWatchResume()
	defer release()
	stopWatchedMember(t, ms, a)
	var from int64
	select {
	case from = <-held:
	case <-time.After(time.Minute):
		t.Fatal("the watch did not resume within a minute of its member's stop")
	}
	if a.Following() {
		t.Fatal("a copy whose watch ended counts as following")
	}
	if _, err := other.ReportError(ctx, "e", "x", th, "deposed elsewhere"); err != nil {
		t.Fatal(err)
	}
	resp, err := other.Client().Get(ctx, "reload/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Revision <= from {
		t.Fatalf("etcd at revision %d after a deposition, the watch resumes from %d", resp.Header.Revision, from)
	}
	if _, err := other.Client().Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	status, leads, err := xLeads(rctx, leader, localReads[0].leads)
	cancel()
	if err == nil && status == http.StatusOK {
		t.Fatalf("local read while the copy cannot resume: %d, x leads %v; want no answer from the copy", status, leads)
	}

	release()
	eventually.True(t, 20*time.Second, "the copy reloaded, following etcd", func() bool {
		return strings.Contains(logs.String(), "reloading election state") && a.Following()
	})
	for _, r := range localReads {
		// The leader read answers 404: nobody leads.
		status, leads, err := xLeads(ctx, srv.URL+r.path+"?consistency=local", r.leads)
		if err != nil || status != http.StatusOK && status != http.StatusNotFound || leads {
			t.Fatalf("local read of %s after the reload: %d, x leads %v, %v; want the deposition", r.path, status, leads, err)
		}
	}
}
