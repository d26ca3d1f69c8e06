package api

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// ReadTimeout bounds a read of the API (a GET under /v1/ that is not an
// event stream): a backend that does not answer (an etcd endpoint with
// nothing listening, a cluster electing a leader) costs a reader this
// long, then a 503 backend-unavailable with Retry-After, rather than the
// backend client's own, longer timeouts. Reads of a backend that answers
// take milliseconds.
const ReadTimeout = 3 * time.Second

// boundReads wraps the handler of a read route with ReadTimeout.
func boundReads(rt route, next http.Handler) http.Handler {
	if rt.method != http.MethodGet || rt.stream || !strings.HasPrefix(rt.pattern, "/v1/") {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
