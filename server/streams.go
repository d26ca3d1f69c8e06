package server

import (
	"context"
	"net/http"
	"strings"
)

// endStreamsOn ends event streams when stop ends: it gives every request
// for an event stream a context that is cancelled with stop, so that
// http.Server.Shutdown, which waits for handlers to return but never
// cancels them, is not held up by streams that would run forever. Other
// requests keep their context and drain normally.
//
// It uses context.AfterFunc rather than a goroutine per stream, so nothing
// outlives the request.
func endStreamsOn(stop context.Context, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isEventStream(r) {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		unhook := context.AfterFunc(stop, cancel)
		defer unhook()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// isEventStream reports whether r asks for a Server-Sent Events stream:
// GET /v1/events, GET /v1/elections/{election}/events, or any GET that
// accepts only text/event-stream.
func isEventStream(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	return strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"), "/events") ||
		r.Header.Get("Accept") == "text/event-stream"
}
