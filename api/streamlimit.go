package api

import "net/http"

// DefaultMaxStreams is the default cap on event streams open at once on one
// replica (Config.MaxStreams).
const DefaultMaxStreams = 10000

// capStreams wraps the handler of an event stream route with the cap on
// streams open at once on this replica: over it, a 429 limit-reached
// problem naming sse_subscribers, so that the client retries later or on
// another replica.
func (a *api) capStreams(rt route, next http.Handler) http.Handler {
	if a.cfg.MaxStreams <= 0 || !rt.stream {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := a.streams.Add(1); n > int64(a.cfg.MaxStreams) {
			a.streams.Add(-1)
			w.Header().Set("Retry-After", "5")
			e := errorf("limit-reached", "this replica serves its maximum of %d event streams (limit sse_subscribers); retry later or on another replica", a.cfg.MaxStreams)
			e.ext = map[string]any{"limit": "sse_subscribers"}
			a.writeError(w, r, e)
			return
		}
		defer a.streams.Add(-1)
		next.ServeHTTP(w, r)
	})
}

// guard wraps the handler of one route with what every request to it goes
// through before the handler: decoding of the path parameters, the rate
// limits, authentication, for event streams the stream cap, and for other
// reads their deadline.
func (a *api) guard(rt route) http.Handler {
	return decodeParams(a.limitRequests(rt, a.authenticate(rt, a.capStreams(rt, boundReads(rt, rt.handler)))))
}
