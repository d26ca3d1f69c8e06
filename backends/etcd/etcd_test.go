package etcd_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/electorhq/elector/backends/etcd"
	"github.com/electorhq/elector/internal/testnet"
)

// member is one embedded etcd server of a test cluster.
type member struct {
	name    string
	dir     string
	client  url.URL
	peer    url.URL
	cluster string
	state   string
	tls     *transport.TLSInfo // client TLS, nil for plain text
	e       *embed.Etcd
}

// freeURL returns an http URL on a free local port, one outside the
// range the kernel hands to outgoing connections (testnet.FreeAddr): a
// port picked with ":0" and closed may be taken by one before etcd binds.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	return url.URL{Scheme: "http", Host: testnet.FreeAddr(t)}
}

// startCluster starts n etcd members in temp dirs and stops them when the
// test ends. Ports are picked free and then bound by etcd, so a parallel
// test can take one in between: the members then start again on others.
func startCluster(t testing.TB, n int) []*member {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ms, err := tryCluster(t, n)
		if err == nil {
			t.Cleanup(func() {
				for _, m := range ms {
					m.stop()
				}
			})
			return ms
		}
		if attempt == 5 || !errors.Is(err, syscall.EADDRINUSE) && !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("etcd members on ports taken meanwhile, starting again: %v", err)
	}
}

// tryCluster starts n members on ports free when it picks them; on an
// error it stops those that started.
func tryCluster(t testing.TB, n int) ([]*member, error) {
	ms := make([]*member, n)
	var initial []string
	for i := range ms {
		m := &member{name: fmt.Sprintf("m%d", i), dir: t.TempDir(), client: freeURL(t), peer: freeURL(t), state: embed.ClusterStateFlagNew}
		initial = append(initial, m.name+"="+m.peer.String())
		ms[i] = m
	}
	for _, m := range ms {
		m.cluster = strings.Join(initial, ",")
	}
	done := make(chan error, n)
	for _, m := range ms {
		go func() { done <- m.start() }()
	}
	var errs []error
	for range ms {
		errs = append(errs, <-done)
	}
	if err := errors.Join(errs...); err != nil {
		for _, m := range ms {
			m.stop()
		}
		return nil, err
	}
	return ms, nil
}

func (m *member) start() error {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.client}, []url.URL{m.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
	cfg.InitialCluster = m.cluster
	cfg.ClusterState = m.state
	cfg.InitialClusterToken = "elector-test"
	if m.tls != nil {
		cfg.ClientTLSInfo = *m.tls
	}
	// Short ticks: faster leader elections, and a minimum lease TTL of
	// 1.5 × 10 ticks = 750ms, so one-second candidates get one-second leases.
	cfg.TickMs, cfg.ElectionMs = 50, 500
	// No fsync: these tests are about elections, not disk durability, and
	// a member stopped cleanly finds its data in the page cache.
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s not ready after 30s", m.name)
	}
	m.e = e
	m.state = embed.ClusterStateFlagExisting
	return nil
}

func (m *member) stop() {
	if m.e != nil {
		m.e.Close()
		<-m.e.Server.StopNotify()
		m.e = nil
	}
}

func endpoints(ms []*member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.client.String())
	}
	return out
}

// newBackend returns a backend over ms, closed when the test ends. opts
// change its Config.
func newBackend(t testing.TB, ms []*member, prefix string, opts ...func(*etcd.Config)) *etcd.Backend {
	t.Helper()
	return newBackendOn(t, endpoints(ms), prefix, opts...)
}

// newBackendOn is newBackend over the members at endpoints.
func newBackendOn(t testing.TB, endpoints []string, prefix string, opts ...func(*etcd.Config)) *etcd.Backend {
	t.Helper()
	cfg := etcd.Config{
		Endpoints:      endpoints,
		Prefix:         prefix,
		DialTimeout:    2 * time.Second,
		RequestTimeout: 3 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, o := range opts {
		o(&cfg)
	}
	b, err := etcd.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
