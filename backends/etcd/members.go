package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/electorhq/elector/gateway"
)

// errNoMember is returned for a stream that needs a member when none is
// connected.
var errNoMember = fmt.Errorf("etcd: no member connected: %w", gateway.ErrUnavailable)

// member is one of Config.Endpoints, with an etcd client of its own (one
// gRPC connection) and the health its probe last found. etcd's client
// balances requests over its endpoints round robin and cannot tell a
// member that stopped answering (a stopped process, a dropped network)
// from a slow one: every request it sends there waits for its deadline.
// With a client per member, the backend chooses the member of each
// attempt itself (members.pick) and moves off one that stops answering.
type member struct {
	url string
	cli atomic.Pointer[clientv3.Client] // nil until connected (with credentials, see connect)

	mu    sync.Mutex
	up    bool
	heard time.Time // when the probe last got an answer
	term  uint64    // raft term as the member last told
	// version is the member's etcd version ("3.5.17"), "" until known.
	version string
	// gone ends when the member goes down; a new one starts when it
	// comes back up. Watches on the member end with it.
	gone   context.Context
	goneFn context.CancelFunc
}

// members is the backend's view of the etcd members it talks to.
type members struct {
	list    []*member
	next    atomic.Uint64 // round robin of pick
	timeout time.Duration // Config.MemberTimeout
	log     *slog.Logger
	connect func(ctx context.Context, url string) (*clientv3.Client, error)
	batch   *batcher // writing transactions, sent alone or in batches

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a member goes up or down or its term changes
}

// newMembers connects to every endpoint of cfg; the clients end with ctx
// (and close). Without credentials this does not wait for any member.
// With credentials etcd's client authenticates while it connects, which
// needs the member to answer: newMembers then returns once every member
// has answered or failed, and fails with gateway.ErrUnavailable when none
// could authenticate; the probe connects the others later.
func newMembers(ctx context.Context, cfg Config) (*members, error) {
	p := &members{timeout: cfg.MemberTimeout, log: cfg.Logger, changed: make(chan struct{}), connect: cfg.client}
	p.batch = &batcher{p: p, off: cfg.WriteBatch <= 1, most: cfg.WriteBatch}
	// Replicas start their round robin at different members, so that their
	// watches spread over the cluster.
	p.next.Store(rand.Uint64())
	for _, url := range cfg.Endpoints {
		m := &member{url: url, up: true, heard: time.Now()}
		m.gone, m.goneFn = context.WithCancel(context.Background())
		p.list = append(p.list, m)
	}
	errs := make([]error, len(p.list))
	var wg sync.WaitGroup
	for i, m := range p.list {
		wg.Go(func() {
			cli, err := p.connect(ctx, m.url)
			if err != nil {
				errs[i] = err
				m.setDown()
				return
			}
			m.cli.Store(cli)
		})
	}
	wg.Wait()
	for _, m := range p.list {
		if m.cli.Load() != nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("etcd: connect %v: %w: %w", cfg.Endpoints, gateway.ErrUnavailable, errors.Join(errs...))
}

// close closes every member's client.
func (p *members) close() error {
	var errs []error
	for _, m := range p.list {
		m.setDown()
		if cli := m.cli.Load(); cli != nil {
			errs = append(errs, cli.Close())
		}
	}
	return errors.Join(errs...)
}

// changes returns a channel closed at the next change of a member's
// health or term.
func (p *members) changes() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

func (p *members) signal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.changed)
	p.changed = make(chan struct{})
}

// pick returns the next member in round-robin order that is up, has a
// client and is not skipped; failing that, one that has a client and is
// not skipped (it may be back before the probe knows); nil if none.
func (p *members) pick(skip func(*member) bool) *member {
	n := uint64(len(p.list))
	start := p.next.Add(1)
	var fallback *member
	for i := range n {
		m := p.list[(start+i)%n]
		if m.cli.Load() == nil || (skip != nil && skip(m)) {
			continue
		}
		if m.isUp() {
			return m
		}
		if fallback == nil {
			fallback = m
		}
	}
	return fallback
}

func (m *member) isUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up
}

// state returns whether m is up and its raft term as last known.
func (m *member) state() (up bool, term uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up, m.term
}

// goneCtx returns a context that ends when m goes down (at once if it is
// down).
func (m *member) goneCtx() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone
}

// setDown marks m down and reports whether it was up.
func (m *member) setDown() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.up
	m.up = false
	m.goneFn()
	return was
}

// heardFrom records a probe's answer at now and reports whether m's
// health or term changed.
func (m *member) heardFrom(resp *pb.StatusResponse, now time.Time) (changed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heard, m.version = now, resp.Version
	if resp.RaftTerm != m.term {
		m.term, changed = resp.RaftTerm, true
	}
	if !m.up {
		m.up, changed = true, true
		m.gone, m.goneFn = context.WithCancel(context.Background())
	}
	return changed
}

// silentFor returns how long m has not answered a probe as of now.
func (m *member) silentFor(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return now.Sub(m.heard)
}

// status asks m for its status over its own connection, failing at once
// (not waiting for a connection) when it has none.
func (m *member) status(ctx context.Context) (*pb.StatusResponse, error) {
	cli := m.cli.Load()
	if cli == nil {
		return nil, fmt.Errorf("etcd: %s: not connected", m.url)
	}
	return pb.NewMaintenanceClient(cli.ActiveConnection()).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
}

// run probes every member every MemberTimeout/3 until ctx ends. A member
// is down from the moment a probe fails, or when it has answered none for
// MemberTimeout (a stopped process or a dropped network answers nothing,
// and a request sent there would wait until its deadline), or when it
// says it knows no raft leader (it is cut off from a quorum, and cannot
// serve); it is up again at its next answer naming a leader. A member
// whose client could not connect (credentials) is connected again first.
func (p *members) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range p.list {
		wg.Go(func() { p.probe(ctx, m) })
	}
	wg.Wait()
}

func (p *members) probe(ctx context.Context, m *member) {
	tick := time.NewTicker(max(p.timeout/3, 10*time.Millisecond))
	defer tick.Stop()
	type answer struct {
		resp *pb.StatusResponse
		err  error
	}
	answers := make(chan answer, 1)
	inflight := false
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-answers:
			inflight = false
			switch {
			case a.err == nil && a.resp.Leader != 0:
				if m.heardFrom(a.resp, time.Now()) {
					p.signal()
				}
			case a.err == nil:
				p.down(ctx, m, "it knows no raft leader")
			case ctx.Err() == nil && !errors.Is(a.err, context.DeadlineExceeded):
				p.down(ctx, m, a.err.Error())
			}
		case now := <-tick.C:
			if m.silentFor(now) > p.timeout {
				p.down(ctx, m, fmt.Sprintf("no answer for %s", p.timeout))
			}
			if inflight {
				continue // it still waits: a stopped member holds it until its deadline
			}
			inflight = true
			wg.Go(func() {
				var a answer
				if m.cli.Load() == nil {
					cli, err := p.connect(ctx, m.url)
					if err != nil {
						answers <- answer{err: err}
						return
					}
					m.cli.Store(cli)
				}
				pctx, cancel := context.WithTimeout(ctx, 2*p.timeout)
				a.resp, a.err = m.status(pctx)
				cancel()
				answers <- a
			})
		}
	}
}

// down marks m down, logging why the first time.
func (p *members) down(ctx context.Context, m *member, why string) {
	if m.setDown() {
		p.log.LogAttrs(ctx, slog.LevelWarn, "etcd: member down, moving requests and watches to the others", slog.String("endpoint", m.url), slog.String("reason", why))
		p.signal()
	}
}
