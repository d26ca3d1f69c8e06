package api

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// RequestIDHeader carries a request's id: the one the client sent, or one
// the gateway made, sent back on every response and named by the log
// lines about the request.
const RequestIDHeader = "X-Request-Id"

// requestIDs names requests "<host>/<random>-<counter>" (the form of chi's
// RequestID middleware, which it replaces): unique per process and
// unlikely to repeat across processes.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	host, err := os.Hostname()
	if host == "" || err != nil {
		host = "localhost"
	}
	r := ""
	for len(r) < 10 {
		var buf [12]byte
		_, _ = rand.Read(buf[:])
		r = strings.NewReplacer("+", "", "/", "").Replace(base64.StdEncoding.EncodeToString(buf[:]))
	}
	return &requestIDs{prefix: host + "/" + r[:10]}
}

// next returns a new id.
func (ids *requestIDs) next() string {
	n := ids.n.Add(1)
	var buf [128]byte
	b := append(buf[:0], ids.prefix...)
	b = append(b, '-')
	var digits [20]byte
	d := strconv.AppendUint(digits[:0], n, 10)
	for range 6 - len(d) {
		b = append(b, '0')
	}
	return string(append(b, d...))
}

// middleware gives every request its id, in the X-Request-Id header of its
// response from the start (requestID reads it there), so that nothing per
// request is kept in its context.
func (ids *requestIDs) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if id == "" {
			id = ids.next()
		}
		w.Header()[RequestIDHeader] = []string{id}
		next.ServeHTTP(w, r)
	})
}

// requestID returns the id of the request that w answers.
func requestID(w http.ResponseWriter) string { return w.Header().Get(RequestIDHeader) }
