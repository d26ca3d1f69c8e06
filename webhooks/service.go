package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/electorhq/elector/gateway"
)

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
