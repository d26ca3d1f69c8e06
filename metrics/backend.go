package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/electorhq/elector/gateway"
)

// backendSeries are the series of backend operations.
type backendSeries struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// backendOps are the op label values of the Backend methods, created at
// zero so that dashboards see them before the first call.
var backendOps = []string{"campaign", "heartbeat", "resign", "report_error", "election", "elections", "configure", "watch"}

func newBackendSeries(reg prometheus.Registerer) backendSeries {
	s := backendSeries{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "backend", Name: "operation_duration_seconds",
			Help:    "Time the coordination backend took for an operation (watch: starting the watch), by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "backend", Name: "errors_total",
			Help: "Backend operations that returned an error, by operation and kind (not_found, token_mismatch, unavailable, …).",
		}, []string{"op", "kind"}),
	}
	for _, op := range backendOps {
		s.duration.WithLabelValues(op)
	}
	reg.MustRegister(s.duration, s.errors)
	return s
}

// observe records one operation that started at start and ended with err.
func (s backendSeries) observe(op string, start time.Time, err error) {
	s.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		s.errors.WithLabelValues(op, errorKind(err)).Inc()
	}
}

// errorKinds maps the gateway's sentinels to the kind label, most specific
// first.
var errorKinds = []struct {
	err  error
	kind string
}{
	{gateway.ErrElectionNotFound, "not_found"},
	{gateway.ErrCandidateNotFound, "not_found"},
	{gateway.ErrKeyNotFound, "not_found"},
	{gateway.ErrNoLeader, "no_leader"},
	{gateway.ErrCandidateExists, "exists"},
	{gateway.ErrTokenMismatch, "token_mismatch"},
	{gateway.ErrRevisionMismatch, "revision_mismatch"},
	{gateway.ErrCursorExpired, "cursor_expired"},
	{gateway.ErrInvalid, "invalid"},
	{gateway.ErrLimit, "limit"},
	{gateway.ErrUnavailable, "unavailable"},
	{context.DeadlineExceeded, "timeout"},
	{context.Canceled, "canceled"},
}

// errorKind names the kind of a backend error; "other" for an error that
// wraps no known sentinel.
func errorKind(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return "other"
}

// Backend returns b with every operation timed and its errors counted. The
// result implements gateway.Runner, gateway.Pinger, gateway.KV and
// gateway.CatchUpReporter exactly when b does, so that the Gateway, the
// readiness probe and package webhooks find the same abilities through it.
func (m *Metrics) Backend(b gateway.Backend) gateway.Backend {
	ib := &instrumented{b: b, s: m.backend}
	return withAbilities(ib, b)
}

// instrumented is the decorator of the gateway.Backend methods.
type instrumented struct {
	b gateway.Backend
	s backendSeries
}

var _ gateway.Backend = (*instrumented)(nil)

// Campaign implements gateway.Backend.
func (i *instrumented) Campaign(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	start := time.Now()
	st, err := i.b.Campaign(ctx, election, c, defaults)
	i.s.observe("campaign", start, err)
	return st, err
}

// Heartbeat implements gateway.Backend.
func (i *instrumented) Heartbeat(ctx context.Context, election, id, tokenHash string) (gateway.Status, error) {
	start := time.Now()
	st, err := i.b.Heartbeat(ctx, election, id, tokenHash)
	i.s.observe("heartbeat", start, err)
	return st, err
}

// Resign implements gateway.Backend.
func (i *instrumented) Resign(ctx context.Context, election, id, tokenHash string) error {
	start := time.Now()
	err := i.b.Resign(ctx, election, id, tokenHash)
	i.s.observe("resign", start, err)
	return err
}

// ReportError implements gateway.Backend.
func (i *instrumented) ReportError(ctx context.Context, election, id, tokenHash, reason string) (gateway.Status, error) {
	start := time.Now()
	st, err := i.b.ReportError(ctx, election, id, tokenHash, reason)
	i.s.observe("report_error", start, err)
	return st, err
}

// Election implements gateway.Backend.
func (i *instrumented) Election(ctx context.Context, election string) (gateway.Election, error) {
	start := time.Now()
	e, err := i.b.Election(ctx, election)
	i.s.observe("election", start, err)
	return e, err
}

// Elections implements gateway.Backend.
func (i *instrumented) Elections(ctx context.Context) ([]gateway.Election, string, error) {
	start := time.Now()
	es, cursor, err := i.b.Elections(ctx)
	i.s.observe("elections", start, err)
	return es, cursor, err
}

// Configure implements gateway.Backend.
func (i *instrumented) Configure(ctx context.Context, election string, s gateway.Settings) (gateway.Election, error) {
	start := time.Now()
	e, err := i.b.Configure(ctx, election, s)
	i.s.observe("configure", start, err)
	return e, err
}

// Watch implements gateway.Backend; it times starting the watch, not the
// stream.
func (i *instrumented) Watch(ctx context.Context, election, after string) (<-chan gateway.Event, error) {
	start := time.Now()
	ch, err := i.b.Watch(ctx, election, after)
	i.s.observe("watch", start, err)
	return ch, err
}
