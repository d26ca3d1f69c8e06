package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/client"
)

// Defaults and bounds of a Config.
const (
	DefaultTTL          = 10 * time.Second
	DefaultConnections  = 64
	DefaultBurstWorkers = 8
	DefaultTimeout      = 5 * time.Second
	DefaultResignWait   = 30 * time.Second

	MaxCandidates  = 1_000_000
	MaxElections   = 100_000
	MaxSubscribers = 10_000
	MaxConnections = 10_000
	MaxReaders     = 10_000
	MaxBurst       = 10_000_000
	MaxDuration    = 24 * time.Hour
)

// ErrInvalidConfig is wrapped by the errors of Config.Validate.
var ErrInvalidConfig = errors.New("bench: invalid config")

// Config is one load to drive.
type Config struct {
	// Gateways are the base URLs of the gateway replicas, such as
	// "http://127.0.0.1:8080"; candidate i talks to Gateways[i%len], and so
	// do subscribers and readers. Required.
	Gateways []string
	// Failover moves a steady candidate as client.Candidacy moves: a
	// request that fails in transport or with a 5xx answer goes to the
	// next gateway at once, and the gateway that answered is the
	// candidate's from then on; a request that gets no answer within
	// Timeout fails, and the next starts with the next gateway. A
	// candidate whose candidacy is gone campaigns again from its own
	// gateway, as a process started afresh would. Each attempt is an
	// operation of its own. Without it a candidate stays with its gateway,
	// whatever happens to it. Default false.
	Failover bool
	// APIToken is sent as "Authorization: Bearer" when set.
	APIToken string
	// Candidates campaign in Elections elections (candidate i in election
	// i%Elections) and heartbeat every TTL/3 until the run ends, then
	// resign. Default none.
	Candidates, Elections int
	// TTL is the candidates' TTL. Default DefaultTTL.
	TTL time.Duration
	// Connections is how many heartbeat loops run, each on its own
	// connection per gateway, each serving its share of the candidates in
	// turn. Default DefaultConnections (capped at Candidates).
	Connections int
	// Subscribers follow the event stream of all elections, each on its own
	// connection, and measure how long each event of this run took to
	// arrive after its timestamp. Default none.
	Subscribers int
	// Readers read the leader of the elections in a closed loop. Default
	// none.
	Readers int
	// Burst campaigns (and then resigns) this many candidates, each in a
	// fresh election, over BurstWorkers concurrent loops. Default none.
	Burst, BurstWorkers int
	// Duration bounds the run; it ends sooner when its context ends, or
	// when the burst is done and there is nothing else to drive. Required.
	Duration time.Duration
	// Timeout bounds each request. Default DefaultTimeout.
	Timeout time.Duration
	// ResignWait bounds the resignations at the end. Default
	// DefaultResignWait.
	ResignWait time.Duration
	// RemoveElections deletes the run's elections at the end, once their
	// candidates have resigned, so that a run leaves nothing behind (on a
	// gateway with API tokens it takes the admin scope). Default false:
	// they stay, for a harness to inspect; elector bench sets it.
	RemoveElections bool
	// Prefix starts the names of the run's elections. Default "bench-"
	// and six random hex digits, so that each run has fresh elections.
	Prefix string
	// Observe, if set, is called with every operation when it ends, from
	// many goroutines at once; it must be quick.
	Observe func(Op)
	// ObserveEvent, if set, is called with every event a subscriber
	// receives (subscriber is its index), from many goroutines at once.
	ObserveEvent func(subscriber int, ev client.Event, received time.Time)
}

// Op is one operation as Config.Observe sees it.
type Op struct {
	Kind     Kind
	Gateway  int // index in Config.Gateways
	Election string
	// Index is the steady candidate's number (for Pause), -1 for other
	// operations.
	Index      int
	Candidate  string
	Start, End time.Time
	// Status is the answer of a campaign or heartbeat that succeeded.
	Status client.Status
	// Leader is the answer of a leader read that succeeded.
	Leader client.Leader
	Err    error
}

var prefixRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,40}$`)

func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Connections == 0 {
		c.Connections = DefaultConnections
	}
	c.Connections = max(1, min(c.Connections, c.Candidates))
	if c.BurstWorkers == 0 {
		c.BurstWorkers = DefaultBurstWorkers
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ResignWait == 0 {
		c.ResignWait = DefaultResignWait
	}
	if c.Prefix == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		c.Prefix = "bench-" + hex.EncodeToString(b[:])
	}
	return c
}

// Validate reports the first field of c that is out of bounds, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case len(c.Gateways) == 0:
		return bad("no gateway URL")
	case c.Candidates < 0 || c.Candidates > MaxCandidates:
		return bad("candidates %d: want 0 to %d", c.Candidates, MaxCandidates)
	case c.Candidates > 0 && (c.Elections < 1 || c.Elections > MaxElections):
		return bad("elections %d: want 1 to %d", c.Elections, MaxElections)
	case c.TTL < 0 || (c.TTL > 0 && c.TTL < 3*time.Millisecond):
		return bad("ttl %s: too short", c.TTL)
	case c.Connections < 0 || c.Connections > MaxConnections:
		return bad("connections %d: want 1 to %d", c.Connections, MaxConnections)
	case c.Subscribers < 0 || c.Subscribers > MaxSubscribers:
		return bad("subscribers %d: want 0 to %d", c.Subscribers, MaxSubscribers)
	case c.Readers < 0 || c.Readers > MaxReaders:
		return bad("readers %d: want 0 to %d", c.Readers, MaxReaders)
	case c.Readers > 0 && c.Candidates == 0:
		return bad("readers need candidates whose elections they read")
	case c.Burst < 0 || c.Burst > MaxBurst:
		return bad("burst %d: want 0 to %d", c.Burst, MaxBurst)
	case c.BurstWorkers < 0 || c.BurstWorkers > MaxConnections:
		return bad("burst workers %d: want 1 to %d", c.BurstWorkers, MaxConnections)
	case c.Candidates == 0 && c.Burst == 0 && c.Subscribers == 0:
		return bad("nothing to do: give candidates, a burst or subscribers")
	case c.Duration <= 0 || c.Duration > MaxDuration:
		return bad("duration %s: want more than 0 and at most %s", c.Duration, MaxDuration)
	case c.Timeout < 0 || c.ResignWait < 0:
		return bad("negative timeout")
	case c.Prefix != "" && !prefixRE.MatchString(c.Prefix):
		return bad("prefix %q: want lower-case letters, digits, _ and -, at most 41", c.Prefix)
	}
	for _, g := range c.Gateways {
		if client.New(g).BaseURL() == "" {
			return bad("gateway %q is not an absolute http(s) URL", g)
		}
	}
	return nil
}

// Load is the engine of `elector bench`: candidates heartbeating every
// TTL/3 through one or more gateways, event-stream subscribers, leader
// reads and bursts of campaigns, measured into fixed-size histograms. A
// harness (package soak) drives the same load and sees every operation and
// event through Config.Observe and Config.ObserveEvent:
//
//	l, err := bench.New(bench.Config{
//		Gateways:   []string{"http://127.0.0.1:8080"},
//		Candidates: 100, Elections: 10, Subscribers: 1,
//		Duration:   30 * time.Second,
//	})
//	if err != nil { … }
//	sum, err := l.Run(ctx)
//
// Create it with New, start it with Run; Progress may be called from
// another goroutine meanwhile.
type Load struct {
	cfg     Config
	stats   *stats
	clients []*client.Client // one per gateway, over the shared transport
	streams []*client.Client // one per gateway, for event streams
	leaders atomic.Int64
	start   atomic.Int64   // unix nanoseconds when Run began
	paused  []atomic.Int64 // per steady candidate: unix nanoseconds until which it is paused
	closers []func()
}

// New returns a Load of cfg, or an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Load, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Load{cfg: cfg, stats: newStats(), paused: make([]atomic.Int64, cfg.Candidates)}
	// Every heartbeat loop, reader and burst worker holds at most one
	// request at a time, so this many idle connections per gateway lets
	// each keep its own connection instead of dialling anew.
	perHost := cfg.Connections + cfg.Readers + cfg.BurstWorkers
	calls := newTransport(perHost)
	// Streams hold their connection for the whole run: a transport of
	// their own keeps them from taking the calls' idle connections.
	streams := newTransport(cfg.Subscribers)
	l.closers = append(l.closers, calls.CloseIdleConnections, streams.CloseIdleConnections)
	for _, g := range cfg.Gateways {
		opts := []client.Option{client.WithUserAgent("elector-bench"), client.WithAPIToken(cfg.APIToken)}
		l.clients = append(l.clients, client.New(g, append(opts, client.WithHTTPClient(&http.Client{Transport: calls}))...))
		l.streams = append(l.streams, client.New(g, append(opts, client.WithHTTPClient(&http.Client{Transport: streams}),
			client.WithReconnectDelay(100*time.Millisecond))...))
	}
	return l, nil
}

// newTransport returns a transport that keeps perHost idle connections to
// each gateway and dials directly (a load tool measures the gateway, not a
// proxy from the environment).
func newTransport(perHost int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no overall cap: the per-host one suffices
		MaxIdleConnsPerHost: max(perHost, 2),
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
}

// Config returns the Load's configuration with defaults filled in.
func (l *Load) Config() Config { return l.cfg }

// Progress returns the counters so far.
func (l *Load) Progress() Progress {
	p := l.stats.progress()
	if s := l.start.Load(); s != 0 {
		p.Elapsed = time.Since(time.Unix(0, s))
	}
	p.Leaders = l.leaders.Load()
	return p
}

// Summary is the outcome of a run.
type Summary struct {
	Gateways     []string `json:"gateways"`
	Prefix       string   `json:"prefix"`
	Candidates   int      `json:"candidates"`
	Elections    int      `json:"elections"`
	Connections  int      `json:"connections"`
	Subscribers  int      `json:"subscribers"`
	Readers      int      `json:"readers"`
	Burst        int      `json:"burst"`
	TTLSeconds   float64  `json:"ttl_seconds"`
	IntervalSecs float64  `json:"heartbeat_interval_seconds"`
	// DurationSecs is how long the load ran, without the resignations.
	DurationSecs float64 `json:"duration_seconds"`
	// Operations is keyed by Kind names: "heartbeat", "event", ….
	Operations map[string]Operation `json:"operations"`
	Errors     Errors               `json:"errors"`
	// Leaders is how many steady candidates last heard they led when the
	// load stopped.
	Leaders int64 `json:"leaders"`
	// Resigned is how many steady candidates resigned at the end (or were
	// already gone); Unresigned how many could not be.
	Resigned   int `json:"resigned"`
	Unresigned int `json:"unresigned"`
	// Removed is how many of the run's elections were deleted at the end
	// (with RemoveElections); Kept says how many were not and why.
	Removed int    `json:"removed_elections"`
	Kept    string `json:"kept_elections,omitempty"`
}

// Run drives the load until cfg.Duration has passed or ctx ends, then
// resigns the candidates it holds and returns the summary. It returns an
// error only when the run could not start (the first event stream
// refused); failed operations are counted in the summary.
func (l *Load) Run(ctx context.Context) (Summary, error) {
	defer func() {
		for _, c := range l.closers {
			c()
		}
	}()
	cfg := l.cfg
	start := time.Now()
	l.start.Store(start.UnixNano())
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	// Subscribers connect first, so that they see the run's first events.
	subCtx, stopSubs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSubs()
	var subs sync.WaitGroup
	for i := range cfg.Subscribers {
		events, err := l.streams[i%len(l.streams)].Watch(subCtx, "", "")
		if err != nil {
			stopSubs()
			subs.Wait()
			return Summary{}, fmt.Errorf("bench: subscriber %d: %w", i, err)
		}
		subs.Go(func() { l.subscribe(i, events) })
	}

	var work, steady sync.WaitGroup
	loops := make([][]*candidate, cfg.Connections)
	for w := range cfg.Connections {
		if cfg.Candidates == 0 {
			break
		}
		steady.Go(func() { loops[w] = l.heartbeatLoop(ctx, w, start) })
	}
	var next atomic.Int64
	for range cfg.Readers {
		work.Go(func() { l.readLoop(ctx, &next) })
	}
	var burst sync.WaitGroup
	var burstNext atomic.Int64
	for range min(cfg.BurstWorkers, cfg.Burst) {
		burst.Go(func() { l.burstLoop(ctx, &burstNext) })
	}
	if cfg.Candidates == 0 && cfg.Readers == 0 && cfg.Burst > 0 {
		// Nothing else to drive: the run ends with the burst.
		go func() { burst.Wait(); cancel() }()
	}
	<-ctx.Done()
	elapsed := time.Since(start)
	work.Wait()
	burst.Wait()
	steady.Wait()
	// Every loop has stopped before any candidate resigns, so that the
	// leaders counted are those of the load, not of its resignations.
	var leaders int64
	for _, mine := range loops {
		for _, c := range mine {
			if c.leader {
				leaders++
			}
		}
	}
	var resigned, unresigned atomic.Int64
	var resigning sync.WaitGroup
	for _, mine := range loops {
		resigning.Go(func() {
			r, u := l.resignAll(mine)
			resigned.Add(int64(r))
			unresigned.Add(int64(u))
		})
	}
	resigning.Wait()
	stopSubs()
	subs.Wait()
	var removed int
	var kept string
	if cfg.RemoveElections {
		removed, kept = l.removeElections(context.WithoutCancel(ctx), l.runElections(int(burstNext.Load())))
	}

	sum := Summary{
		Gateways: cfg.Gateways, Prefix: cfg.Prefix,
		Candidates: cfg.Candidates, Elections: cfg.Elections, Connections: cfg.Connections,
		Subscribers: cfg.Subscribers, Readers: cfg.Readers, Burst: cfg.Burst,
		TTLSeconds: cfg.TTL.Seconds(), IntervalSecs: (cfg.TTL / 3).Seconds(),
		DurationSecs: elapsed.Seconds(),
		Leaders:      leaders,
		Resigned:     int(resigned.Load()), Unresigned: int(unresigned.Load()),
		Removed: removed, Kept: kept,
	}
	if cfg.Candidates == 0 {
		sum.Connections = 0
	}
	l.stats.summary(&sum, elapsed)
	return sum, nil
}

// Pause stops steady candidate i's heartbeats (and campaigns) for d, as
// if its process were stopped: a fault to inject. Indexes out of range are
// ignored.
func (l *Load) Pause(i int, d time.Duration) {
	if i >= 0 && i < len(l.paused) {
		l.paused[i].Store(time.Now().Add(d).UnixNano())
	}
}

// isPaused reports whether steady candidate i is paused now.
func (l *Load) isPaused(i int) bool { return time.Now().UnixNano() < l.paused[i].Load() }

// ElectionName returns the name of steady election i of the run.
func (l *Load) ElectionName(i int) string { return fmt.Sprintf("%s-%d", l.cfg.Prefix, i) }

// observe passes op to Config.Observe, if set.
func (l *Load) observe(op Op) {
	if l.cfg.Observe != nil {
		l.cfg.Observe(op)
	}
}

// record counts op in the stats under kind and passes it on.
func (l *Load) record(op Op) {
	if op.Err != nil {
		l.stats.fail(op.Kind, op.Err)
	} else {
		l.stats.ok(op.Kind, op.End.Sub(op.Start))
	}
	l.observe(op)
}
