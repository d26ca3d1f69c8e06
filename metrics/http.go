package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// RouteUnmatched is the route label of a request that matched no route
// (answered 404), so that raw paths never become label values.
const RouteUnmatched = "unmatched"

// httpSeries are the series of the HTTP API.
type httpSeries struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// of holds the series of each route, method and status met so far
	// (routeKey to routeSeries): looked up without the vectors' hashing
	// of the label values, their locks and the slice of values each
	// lookup allocates. It grows as the vectors do, by route, method and
	// status, never by a raw path.
	of *sync.Map
}

// routeKey names the series of one route, method and status.
type routeKey struct {
	route, method string
	code          int
}

// routeSeries are the series a request of a routeKey counts in.
type routeSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// series returns the series of route, method and code.
func (s httpSeries) series(route, method string, code int) routeSeries {
	k := routeKey{route, method, code}
	if v, ok := s.of.Load(k); ok {
		return v.(routeSeries)
	}
	v := routeSeries{s.requests.WithLabelValues(route, method, strconv.Itoa(code)), s.duration.WithLabelValues(route, method)}
	s.of.Store(k, v)
	return v
}

func newHTTPSeries(reg prometheus.Registerer) httpSeries {
	s := httpSeries{
		of: new(sync.Map),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method (an event stream counts its whole life).",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
	}
	reg.MustRegister(s.requests, s.duration)
	return s
}

// Middleware counts and times each request by its chi route pattern. It
// must run inside a chi router (Router.Use), where the pattern is known
// once the request has been routed; a request no route matched is counted
// as RouteUnmatched.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// A writer already wrapped (by the request log) tells the status
		// as well: no second wrapper per request.
		ww, wrapped := w.(middleware.WrapResponseWriter)
		if !wrapped {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		defer func() {
			// Also on a panic (re-raised by the server as ErrAbortHandler).
			code := ww.Status()
			if code == 0 {
				code = http.StatusOK
			}
			s := m.http.series(routeOf(r), methodLabel(r.Method), code)
			s.requests.Inc()
			s.duration.Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(ww, r)
	})
}

// routeOf is the chi route pattern r was routed to, or RouteUnmatched.
func routeOf(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return RouteUnmatched
	}
	if p := rc.RoutePattern(); p != "" && p != "/*" {
		return p
	}
	return RouteUnmatched
}

// methodLabel keeps the standard methods and folds anything else into
// "OTHER", so that a client cannot grow the label without bound.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// StreamStarted counts an event stream as open in elector_sse_subscribers;
// the func it returns counts it closed and must be called exactly once.
func (m *Metrics) StreamStarted() (ended func()) {
	m.sse.Inc()
	return m.sse.Dec
}
