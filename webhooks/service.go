package webhooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/gateway"
)

// Defaults of Config.
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultBeginTimeout   = 10 * time.Second
	DefaultClaimTTL       = 20 * time.Second
	DefaultPollInterval   = 2 * time.Second
	DefaultSecretOverlap  = 24 * time.Hour
	DefaultMaxRetryAfter  = time.Hour
	DefaultKeepDeliveries = 500
	// MaxURLBytes bounds an endpoint URL.
	MaxURLBytes = 2048
)

// Config tunes a Service. The zero value is ready to use.
type Config struct {
	// Replica names this replica in claims. Default: a random id.
	Replica string
	// AllowPrivateNetworks lets webhooks reach loopback, private,
	// link-local and CGNAT addresses. Default false; local development and
	// tests set it.
	AllowPrivateNetworks bool
	// RequestTimeout bounds one delivery attempt. Default 10s.
	RequestTimeout time.Duration
	// RetrySchedule is the wait before each retry (jittered ±20%); after
	// the last, the delivery fails. Default DefaultRetrySchedule().
	RetrySchedule []time.Duration
	// MaxRetryAfter caps a receiver's Retry-After. Default 1h.
	MaxRetryAfter time.Duration
	// BeginTimeout is how long a candidate's own leader.begin may go
	// unacknowledged before the candidate is put in error: from the event,
	// or, if no attempt was recorded yet, from the first attempt when that
	// is later. Default 10s; a candidate may ask for its own.
	BeginTimeout time.Duration
	// ClaimTTL is how long a replica's claim on an endpoint lasts unless
	// renewed (every ClaimTTL/3); a dead replica's endpoints wait this long
	// for another replica. An attempt starts only while the claim outlasts
	// it, so ClaimTTL must be at least twice RequestTimeout (then a claim
	// renewed on time always does). Default DefaultClaimTTL, or twice
	// RequestTimeout if that is longer.
	ClaimTTL time.Duration
	// PollInterval is how often Run looks for endpoints to claim.
	// Default 2s.
	PollInterval time.Duration
	// SecretOverlap is how long a rotated-out secret keeps signing.
	// Default 24h.
	SecretOverlap time.Duration
	// KeepDeliveries is how many delivery records an endpoint keeps.
	// Default 500.
	KeepDeliveries int
	// Logger receives the Service's logs; never a secret or a URL's query.
	// Default slog.Default().
	Logger *slog.Logger
	// Resolver resolves endpoint hosts when they are registered. Default
	// net.DefaultResolver.
	Resolver Resolver
	// Jitter spreads retry waits. Default ±20% at random; tests pass the
	// identity.
	Jitter func(time.Duration) time.Duration
	// Metrics observes attempts and deliveries. Default NopMetrics{}.
	Metrics Metrics
}

func (c Config) withDefaults() Config {
	if c.Replica == "" {
		c.Replica = newID("r-")
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetrySchedule == nil {
		c.RetrySchedule = DefaultRetrySchedule()
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.BeginTimeout <= 0 {
		c.BeginTimeout = DefaultBeginTimeout
	}
	if c.ClaimTTL <= 0 {
		c.ClaimTTL = max(DefaultClaimTTL, 2*c.RequestTimeout)
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.SecretOverlap <= 0 {
		c.SecretOverlap = DefaultSecretOverlap
	}
	if c.KeepDeliveries <= 0 {
		c.KeepDeliveries = DefaultKeepDeliveries
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Jitter == nil {
		c.Jitter = jitter
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	return c
}

// Validate reports the first setting of c that cannot work.
func (c Config) Validate() error {
	for i, d := range c.RetrySchedule {
		if d <= 0 {
			return fmt.Errorf("webhooks: retry schedule entry %d is %s; waits must be positive", i+1, d)
		}
	}
	if c.ClaimTTL != 0 && c.ClaimTTL < time.Second {
		return fmt.Errorf("webhooks: claim ttl %s is below 1s", c.ClaimTTL)
	}
	if rt := cmp.Or(max(c.RequestTimeout, 0), DefaultRequestTimeout); c.ClaimTTL != 0 && c.ClaimTTL < 2*rt {
		return fmt.Errorf("webhooks: claim ttl %s is less than twice the request timeout %s: an attempt could outlast the claim", c.ClaimTTL, rt)
	}
	return nil
}

// Service delivers the webhooks of one gateway replica and manages
// endpoints. Create it with New; run Run on every replica. Its methods are
// safe for concurrent use.
type Service struct {
	gw     *gateway.Gateway
	kv     gateway.KV
	cfg    Config
	log    *slog.Logger
	client *http.Client
	now    func() time.Time
	wake   chan struct{}

	mu      sync.Mutex
	running map[string]bool // endpoint ids with a worker on this replica
	created int             // delivery records created, for pruneSoon

	crash bool // tests: workers end without releasing their claims, as if the process died

	runs atomic.Int32 // Run calls in progress, for Running
}

// Running reports whether Run is delivering (the readiness probe's
// outbox check).
func (s *Service) Running() bool { return s.runs.Load() > 0 }

// New returns a Service that delivers the events of gw, keeping its state
// in kv (usually the gateway's backend; see gateway.Gateway.KV).
func New(gw *gateway.Gateway, kv gateway.KV, cfg Config) *Service {
	cfg = cfg.withDefaults()
	return &Service{
		gw: gw, kv: kv, cfg: cfg, log: cfg.Logger,
		client:  newClient(cfg.AllowPrivateNetworks),
		now:     time.Now,
		wake:    make(chan struct{}, 1),
		running: map[string]bool{},
	}
}

// Config returns the Service's configuration with defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// newClient returns the HTTP client of deliveries: no proxy (a proxy would
// dial for us, past the guard), no redirects followed (a 3xx is a failed
// attempt), and unless allowPrivate a dialler that refuses private
// addresses.
func newClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = dialControl
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the attempt's context bounds it
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// nudge makes Run look for endpoints now rather than at its next poll.
func (s *Service) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run claims endpoints and delivers their webhooks until ctx ends; then it
// stops its workers, which release their claims so that another replica
// continues at once, and returns nil. Every worker has returned when Run
// returns.
func (s *Service) Run(ctx context.Context) error {
	s.runs.Add(1)
	defer s.runs.Add(-1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.client.CloseIdleConnections()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		if err := s.dispatch(ctx, &wg); err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: looking for endpoints failed", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// dispatch claims every endpoint it can and starts a worker for each.
func (s *Service) dispatch(ctx context.Context, wg *sync.WaitGroup) error {
	eps, err := listJSON[Endpoint](ctx, s.kv, "wh/ep")
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if ep.Disabled || s.isRunning(ep.ID) {
			continue
		}
		c, err := s.claim(ctx, ep)
		if err != nil {
			if ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelWarn, "webhooks: claim failed", slog.String("endpoint", ep.ID), slog.Any("err", err))
			}
			continue
		}
		if c == nil {
			continue
		}
		s.setRunning(ep.ID, true)
		wg.Go(func() {
			defer s.setRunning(ep.ID, false)
			s.work(ctx, ep, c)
		})
	}
	return nil
}

func (s *Service) isRunning(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[id]
}

func (s *Service) setRunning(id string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.running[id] = true
	} else {
		delete(s.running, id)
	}
}

// claim takes ep's cursor for this replica if nobody holds it or its
// holder's claim expired. It returns nil, nil when another replica holds
// it or wins the race.
func (s *Service) claim(ctx context.Context, ep Endpoint) (*claim, error) {
	key := cursorKey(ep.ID)
	now := s.now()
	rec, rev, err := getJSON[cursorRecord](ctx, s.kv, key)
	switch {
	case errors.Is(err, gateway.ErrKeyNotFound):
		rec = cursorRecord{Last: ep.Start, Replica: s.cfg.Replica, Until: now.Add(s.cfg.ClaimTTL)}
		rev, err = createJSON(ctx, s.kv, key, rec)
	case err != nil:
		return nil, err
	case rec.Replica != "" && rec.Replica != s.cfg.Replica && rec.Until.After(now):
		return nil, nil
	default:
		rec.Replica, rec.Until = s.cfg.Replica, now.Add(s.cfg.ClaimTTL)
		rev, err = updateJSON(ctx, s.kv, key, rec, rev)
	}
	if errors.Is(err, gateway.ErrRevisionMismatch) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &claim{s: s, key: key, rec: rec, rev: rev, last: rec.Last}, nil
}
