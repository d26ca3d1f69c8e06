package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// logRequests writes one structured line per request once it is answered,
// with Config.LogRequests, and for every 5xx answer: method, route
// pattern, status, bytes, duration and request id. It never logs headers,
// so the candidate token stays out of the log.
func (a *api) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)

		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case !a.cfg.LogRequests:
			return
		}
		route := ""
		if rc := chi.RouteContext(r.Context()); rc != nil {
			route = rc.RoutePattern()
		}
		a.log.LogAttrs(r.Context(), level, "request",
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Int("bytes", ww.BytesWritten()),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", requestID(w)))
	})
}

// recoverPanics turns a panic in a handler into a 500 problem and a log
// line, so that one bad request cannot take the process down.
func (a *api) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // a sentinel the server itself re-panics with
				panic(v)
			}
			a.writeError(w, r, fmt.Errorf("api: panic: %v", v))
		}()
		next.ServeHTTP(w, r)
	})
}

// decodeParams percent-decodes the route's path parameters in place. chi
// routes on the escaped path when the request's differs from the default
// encoding, and then hands out parameters still escaped: without this, a
// client that escapes a ':' of a candidate id (encodeURIComponent does)
// would be told its id is invalid. A parameter that does not decode is
// left as it is, for the handler's validation to refuse; one that decodes
// to a '/' is refused there too (no name or id may hold one).
func decodeParams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc := chi.RouteContext(r.Context()); rc != nil && r.URL.RawPath != "" {
			for i, v := range rc.URLParams.Values {
				if d, err := url.PathUnescape(v); err == nil {
					rc.URLParams.Values[i] = d
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
