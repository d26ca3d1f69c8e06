package api

import "net/http"

// Metrics is what the API needs from a metrics exporter; package metrics
// provides one. Without it (Config.Metrics nil) GET /metrics answers a
// not-found problem and nothing is observed.
type Metrics interface {
	// Handler serves GET /metrics in the Prometheus exposition format.
	Handler() http.Handler
	// Middleware observes every request. It runs inside the router, so the
	// chi route pattern is known once the request is answered.
	Middleware(next http.Handler) http.Handler
	// StreamStarted is called when an event stream starts; the func it
	// returns is called once when the stream ends.
	StreamStarted() (ended func())
}

// observeRequests hands each request to the metrics middleware, if any.
func (a *api) observeRequests(next http.Handler) http.Handler {
	if a.cfg.Metrics == nil {
		return next
	}
	return a.cfg.Metrics.Middleware(next)
}

// streamStarted tells the metrics that an event stream started; call the
// func it returns when the stream ends.
func (a *api) streamStarted() (ended func()) {
	if a.cfg.Metrics == nil {
		return func() {}
	}
	return a.cfg.Metrics.StreamStarted()
}

// metrics: GET /metrics, the Prometheus exposition.
func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Metrics == nil {
		a.writeError(w, r, errorf("not-found", "metrics are not enabled on this gateway"))
		return
	}
	a.cfg.Metrics.Handler().ServeHTTP(w, r)
}
