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
	// durationOf holds the duration series of backendOps, made once: a
	// local read is timed in a few microseconds, and looking its series up
	// by label value (hashing it, under the vector's lock) cost a tenth
	// of that. Never written after newBackendSeries.
	durationOf map[string]prometheus.Observer
}

// backendOps are the op label values of the Backend methods, created at
// zero so that dashboards see them before the first call.
var backendOps = []string{"campaign", "heartbeat", "resign", "report_error", "election", "elections", "election_local", "elections_local", "configure", "watch", "transfer", "handover", "open_session", "keep_session", "close_session"}

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
	s.durationOf = make(map[string]prometheus.Observer, len(backendOps))
	for _, op := range backendOps {
		s.durationOf[op] = s.duration.WithLabelValues(op)
	}
	reg.MustRegister(s.duration, s.errors)
	return s
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
	{gateway.ErrSessionNotFound, "not_found"},
	{gateway.ErrSessionInElection, "exists"},
	{gateway.ErrNoLeader, "no_leader"},
	{gateway.ErrCandidateExists, "exists"},
	{gateway.ErrTokenMismatch, "token_mismatch"},
	{gateway.ErrRevisionMismatch, "revision_mismatch"},
	{gateway.ErrCursorExpired, "cursor_expired"},
	{gateway.ErrInvalid, "invalid"},
	{gateway.ErrLimit, "limit"},
	{gateway.ErrTransferPending, "transfer_pending"},
	{gateway.ErrNotFollower, "not_follower"},
	{gateway.ErrNotLeader, "not_leader"},
	{gateway.ErrNoTransfer, "no_transfer"},
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

// ObserveBackend returns b with every call timed and its errors counted
// (gateway.Observe with BackendObserver); it keeps b's optional hints:
//
//	gw := gateway.New(m.ObserveBackend(backend), cfg)
func (m *Metrics) ObserveBackend(b gateway.Backend) gateway.Backend {
	return gateway.Observe(b, m.BackendObserver())
}

// BackendObserver returns the gateway.Observer that times backend calls
// and counts their errors, for gateway.Observe.
func (m *Metrics) BackendObserver() gateway.Observer { return backendObserver{m.backend} }

// backendObserver implements gateway.Observer over the backend series.
type backendObserver struct{ s backendSeries }

var _ gateway.Observer = backendObserver{}

// BackendCall implements gateway.Observer.
func (o backendObserver) BackendCall(op string, d time.Duration, err error) {
	h, ok := o.s.durationOf[op]
	if !ok {
		h = o.s.duration.WithLabelValues(op)
	}
	h.Observe(d.Seconds())
	if err != nil {
		o.s.errors.WithLabelValues(op, errorKind(err)).Inc()
	}
}
