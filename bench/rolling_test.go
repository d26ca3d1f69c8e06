package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
	"github.com/electorhq/elector/internal/testnet"
)

// member is one `elector serve` of an embedded three-member cluster.
type member struct {
	p      *process
	dir    string
	config string
}

// startCluster starts three `elector serve` of a release build forming one
// embedded cluster, as configs/cluster-N.yaml do, on free loopback ports,
// and waits until every one is ready.
func startCluster(tb testing.TB) []*member {
	tb.Helper()
	bin := buildElector(tb)
	listen := []string{testnet.FreeAddr(tb), testnet.FreeAddr(tb), testnet.FreeAddr(tb)}
	routes := []string{testnet.FreeAddr(tb), testnet.FreeAddr(tb), testnet.FreeAddr(tb)}
	ms := make([]*member, 3)
	for i := range ms {
		dir := tb.TempDir()
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		cfg := fmt.Sprintf("listen: %s\nembedded:\n  data_dir: %s\n  server_name: elector-%d\n  cluster_listen: %s\n  routes: [%s]\nnats:\n  replicas: 3\n%s",
			listen[i], filepath.Join(dir, "data"), i+1, routes[i], strings.Join(others, ", "), os.Getenv("ELECTOR_BENCH_CONFIG"))
		path := filepath.Join(dir, "elector.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			tb.Fatal(err)
		}
		ms[i] = &member{dir: dir, config: path}
		ms[i].p = startProcess(tb, dir, bin, nil, "serve", "--config", path)
		ms[i].p.URL = "http://" + listen[i]
	}
	for _, m := range ms {
		m.p.waitHTTP(tb, m.p.URL+"/readyz")
	}
	return ms
}

// restart starts m again, as it was, and waits until it is ready.
func (m *member) restart(tb testing.TB) {
	tb.Helper()
	url := m.p.URL
	m.p = startProcess(tb, m.dir, buildElector(tb), nil, "serve", "--config", m.config)
	m.p.URL = url
	m.p.waitHTTP(tb, url+"/readyz")
}

// writes drives record writes (a campaign into a fresh election, then its
// resignation) from 4 writers through the members that are up, and notes
// when each succeeded. down[i] set means member i is being restarted: no
// writer uses it then.
type writes struct {
	mu    sync.Mutex
	ok    []time.Time
	fails int
	down  [3]atomic.Bool
}

func (w *writes) run(ctx context.Context, ms []*member) {
	c := newClient(8)
	var wg sync.WaitGroup
	for wr := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				m := ms[(wr+i)%3]
				if w.down[(wr+i)%3].Load() {
					continue
				}
				election := fmt.Sprintf("roll-%d-%d", wr, i)
				tok, err := electorCampaign(c, m.p.URL, election, "a", "10s")
				if err == nil {
					err = call(c, "DELETE", m.p.URL+"/v1/elections/"+election+"/candidates/a", http.Header{api.TokenHeader: {tok}}, nil, nil)
				}
				w.mu.Lock()
				if err != nil {
					w.fails++
				} else {
					w.ok = append(w.ok, time.Now())
				}
				w.mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// stall is the longest time between two successful writes in [from, to].
func (w *writes) stall(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, worst := from, time.Duration(0)
	for _, t := range w.ok {
		if t.Before(from) || t.After(to) {
			continue
		}
		worst = max(worst, t.Sub(last))
		last = t
	}
	return max(worst, to.Sub(last))
}

// fleetRolling: writes through an embedded three-member cluster while each
// member in turn is stopped with SIGTERM and started again (a rolling
// restart), and then while each in turn is killed (SIGKILL, a crash) and
// started again; the stall is the longest time without a successful write
// from the signal until the member is ready again and 2 s more.
func fleetRolling(t *testing.T) string {
	members := startCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	var w writes
	done := make(chan struct{})
	go func() { w.run(ctx, members); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(3 * time.Second) // writes flowing

	round := func(sig syscall.Signal) []time.Duration {
		var stalls []time.Duration
		for i, m := range members {
			w.down[i].Store(true)
			from := time.Now()
			_ = m.p.cmd.Process.Signal(sig)
			<-m.p.done
			m.restart(t)
			w.down[i].Store(false)
			time.Sleep(2 * time.Second)
			stalls = append(stalls, w.stall(from, time.Now()))
		}
		return stalls
	}
	graceful := round(syscall.SIGTERM)
	crashed := round(syscall.SIGKILL)
	w.mu.Lock()
	n, fails := len(w.ok), w.fails
	w.mu.Unlock()

	tb := &table{title: "Embedded three-member cluster: writes while each member restarts in turn"}
	tb.add("restart", "member 1", "member 2", "member 3", "worst")
	row := func(name string, s []time.Duration) {
		cells := []string{name}
		for _, d := range s {
			cells = append(cells, ms(d))
		}
		tb.add(append(cells, ms(slices.Max(s)))...)
	}
	row("SIGTERM, start again (rolling)", graceful)
	row("SIGKILL, start again (crash)", crashed)
	return tb.String() + fmt.Sprintf("\nLongest time without a successful write (a campaign and its resignation into a fresh election, 4 writers through the members that are up). %d writes, %d failed attempts (through a member as it stopped, answered 503 while the streams had no leader).\n", n, fails)
}
