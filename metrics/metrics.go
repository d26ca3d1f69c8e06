package metrics

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"

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
	labelLimit     int // elections with series of their own; 0: every one
	labeled        labeledElections
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

// DefaultElectionLabelLimit is how many elections get series of their own
// unless WithElectionLabelLimit says otherwise.
const DefaultElectionLabelLimit = 1000

// OtherElections is the election label of the series that sum the
// elections past the label limit (WithElectionLabelLimit). No election is
// named so: names start with a letter or a digit.
const OtherElections = "_other"

// WithElectionLabelLimit bounds the elections that get per-election series
// of their own to n (0: no bound; default DefaultElectionLabelLimit), so
// that the number of series, and the memory they take, stays bounded
// however many elections there are. Past it, elections are summed in the
// series labelled election="_other": for the candidates and leaders gauges
// the elections after the first n by name, for the transitions counter
// those after the first n this replica saw a transition of. Sums over the
// election label stay exact.
func WithElectionLabelLimit(n int) Option {
	return func(m *Metrics) { m.labelLimit = max(n, 0) }
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
	m := &Metrics{reg: prometheus.NewRegistry(), electionLabels: true, labelLimit: DefaultElectionLabelLimit, log: slog.Default()}
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

// labeledElections remembers the elections that got transition series of
// their own, up to the label limit.
type labeledElections struct {
	mu  sync.Mutex
	set map[string]struct{}
}

// label is the election label of a transition of election: the election
// itself while fewer than limit (0: any number) have one, else
// OtherElections.
func (l *labeledElections) label(election string, limit int) string {
	if limit <= 0 {
		return election
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.set[election]; ok {
		return election
	}
	if len(l.set) >= limit {
		return OtherElections
	}
	if l.set == nil {
		l.set = map[string]struct{}{}
	}
	l.set[strings.Clone(election)] = struct{}{}
	return election
}
