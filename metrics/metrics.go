package metrics

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace starts the name of every elector series.
const namespace = "elector"

// Metrics owns elector's registry and the series that the components
// update. Create it with New; its methods are safe for concurrent use.
type Metrics struct {
	reg            *prometheus.Registry
	electionLabels bool
	log            *slog.Logger

	http        httpSeries
	transitions *prometheus.CounterVec
	sse         prometheus.Gauge
	hooks       webhookSeries
	backend     backendSeries
	handler     http.Handler
}

// Option configures New.
type Option func(*Metrics)

// WithElectionLabels keeps (true, the default) or drops (false) the
// election label of the per-election series: candidates, leaders and leader
// transitions. Without it they are summed over all elections, which keeps
// the number of series fixed however many elections there are.
func WithElectionLabels(on bool) Option {
	return func(m *Metrics) { m.electionLabels = on }
}

// WithLogger sets where scrape and watch errors are logged. Default
// slog.Default().
func WithLogger(log *slog.Logger) Option {
	return func(m *Metrics) {
		if log != nil {
			m.log = log
		}
	}
}

// New returns a Metrics with a fresh registry holding the Go runtime and
// process collectors and every elector series but the per-election gauges,
// which ObserveGateway adds.
func New(opts ...Option) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), electionLabels: true, log: slog.Default()}
	for _, o := range opts {
		o(m)
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.http = newHTTPSeries(m.reg)
	m.transitions = newTransitionsCounter(m.reg, m.electionLabels)
	m.sse = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "sse_subscribers",
		Help: "Event streams (Server-Sent Events) open on this replica.",
	})
	m.reg.MustRegister(m.sse)
	m.hooks = newWebhookSeries(m.reg)
	m.backend = newBackendSeries(m.reg)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg, // promhttp_metric_handler_errors_total
	})
	return m
}

// Registry returns the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats. A
// collector that fails (the backend not answering in time) leaves its series
// out of that scrape and logs why; the other series are still served.
func (m *Metrics) Handler() http.Handler { return m.handler }
