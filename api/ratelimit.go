package api

import (
	"crypto/sha256"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// limiterIdle is how long a bucket is kept after its last use; a full
// bucket is the same as a fresh one, so forgetting it loses nothing.
const limiterIdle = 5 * time.Minute

// maxBuckets caps the buckets one limiter keeps. Past it (after sweeping
// the idle ones) a new key is let through unlimited rather than refused:
// a flood of made-up keys must not cost a real client its requests.
const maxBuckets = 100_000

// bucketLimiter is a token bucket per key (a client address, a candidate).
// It needs no goroutine: idle buckets are swept while adding new ones. A
// bucket is two numbers in the map (no limiter object, no pointer), so
// that a replica with many candidates pays little memory for their
// heartbeat buckets.
type bucketLimiter[K comparable] struct {
	rate  float64 // tokens per second
	burst float64

	mu        sync.Mutex
	buckets   map[K]bucket
	lastSweep time.Time
}

// bucket is one key's tokens as of last, a time in Unix nanoseconds that
// is also when the key was last seen.
type bucket struct {
	tokens float64
	last   int64
}

// newBucketLimiter returns a limiter of perSecond requests per key with
// burst, or nil for no limit (perSecond <= 0).
func newBucketLimiter[K comparable](perSecond float64, burst int) *bucketLimiter[K] {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = int(math.Ceil(perSecond))
	}
	return &bucketLimiter[K]{rate: perSecond, burst: float64(burst), buckets: map[K]bucket{}}
}

// allow takes a token of key's bucket, or says how long until one is
// available.
func (l *bucketLimiter[K]) allow(key K, now time.Time) (bool, time.Duration) {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		// Sweep now and then; when full, at most once a second, so that a
		// flood of new keys cannot make every request walk the map.
		if d := now.Sub(l.lastSweep); d > limiterIdle || (len(l.buckets) >= maxBuckets && d > time.Second) {
			for k, v := range l.buckets {
				if t-v.last > int64(limiterIdle) {
					delete(l.buckets, k)
				}
			}
			l.lastSweep = now
		}
		if len(l.buckets) >= maxBuckets {
			return true, 0
		}
		b = bucket{tokens: l.burst, last: t}
	}
	if t > b.last {
		b.tokens = min(l.burst, b.tokens+float64(t-b.last)/1e9*l.rate)
		b.last = t
	}
	if b.tokens >= 1 {
		b.tokens--
		l.buckets[key] = b
		return true, 0
	}
	l.buckets[key] = b
	return false, time.Duration((1 - b.tokens) / l.rate * 1e9)
}

// isWrite reports whether method changes state.
func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// heartbeatPattern and sessionHeartbeatPattern are the routes of
// heartbeats, which are limited per candidate and per session rather than
// per client address.
const (
	heartbeatPattern        = "/v1/elections/{election}/candidates/{id}/heartbeat"
	sessionHeartbeatPattern = "/v1/sessions/{session}/heartbeat"
)

// limitRequests wraps the handler of one route with the rate limits that
// apply to it: heartbeats per candidate or session, other writes per
// client address, reads (but event streams) per client address and by how
// many run at once. Over a limit: a 429 problem with Retry-After naming
// the limit.
// Routes no limit applies to are returned as they are, at no cost.
func (a *api) limitRequests(rt route, next http.Handler) http.Handler {
	switch {
	case rt.pattern == heartbeatPattern:
		return a.limitHeartbeats(TokenHeader, "candidate", func(r *http.Request) (string, string) {
			return chi.URLParam(r, "election"), chi.URLParam(r, "id")
		}, next)
	case rt.pattern == sessionHeartbeatPattern:
		// No election name is empty: a session's bucket is never a
		// candidate's.
		return a.limitHeartbeats(SessionTokenHeader, "session", func(r *http.Request) (string, string) {
			return "", chi.URLParam(r, "session")
		}, next)
	case isWrite(rt.method):
		return a.limitByAddress(a.writes, "writes_per_second", "writes", next)
	case strings.HasPrefix(rt.pattern, "/v1/") && !rt.stream:
		return a.limitByAddress(a.reads, "reads_per_second", "reads", a.capReads(next))
	}
	return next
}

// limitByAddress applies l, keyed by the client's address, to next.
func (a *api) limitByAddress(l *bucketLimiter[netip.Addr], limit, what string, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.allow(clientAddr(r, a.cfg.TrustedProxies), time.Now()); !ok {
			a.rateLimited(w, r, wait, limit, "this client sent more than %g %s per second (burst %d; limit %s)", l.rate, what, int(l.burst), limit)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitHeartbeats applies the heartbeat limit per candidate, or per
// session (what): the key is the election and the candidate (or the
// session) that names gives, and the hash of the token sent in
// tokenHeader, so that a fleet behind one proxy address is never refused
// as a crowd, and nobody without the token can spend its bucket.
// Leadership: refusing a heartbeat can at most let a candidate expire,
// never make a second leader; and a candidate or session that heartbeats
// at most HeartbeatRate times a second (far above TTL/3 for the shortest
// TTL) is never refused.
func (a *api) limitHeartbeats(tokenHeader, what string, names func(*http.Request) (election, id string), next http.Handler) http.Handler {
	l := a.heartbeats
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get(tokenHeader)
		if tok == "" {
			next.ServeHTTP(w, r) // refused as a missing token
			return
		}
		election, id := names(r)
		if ok, wait := l.allow(newHeartbeatKey(election, id, tok), time.Now()); !ok {
			a.rateLimited(w, r, wait, "heartbeats_per_second", "%s %q sent more than %g heartbeats per second (burst %d; limit heartbeats_per_second); heartbeat every TTL/3",
				what, clip(id), l.rate, int(l.burst))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// heartbeatKey is a heartbeat bucket's key: the SHA-256 of the election
// (empty for a session), the candidate (or the session) and the token, so that the limiter's memory holds no
// candidate token and no string of the request.
type heartbeatKey [sha256.Size]byte

func newHeartbeatKey(election, id, token string) heartbeatKey {
	var buf [256]byte // on the stack for every key of valid names and tokens
	b := append(append(append(append(append(buf[:0], election...), 0), id...), 0), token...)
	return sha256.Sum256(b) // no election name or candidate id holds a NUL
}

// rateLimited writes a 429 rate-limited problem naming limit, with a
// Retry-After of wait rounded up.
func (a *api) rateLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, limit, format string, args ...any) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	e := errorf("rate-limited", format, args...)
	e.detail += "; retry after " + strconv.Itoa(secs) + " s"
	e.ext = map[string]any{"limit": limit}
	a.writeError(w, r, e)
}

// capReads wraps a read route with the cap on reads served at once on this
// replica (Config.MaxReads): over it, a 429 limit-reached problem naming
// concurrent_reads, so that the backend's work stays bounded whatever the
// number of readers.
func (a *api) capReads(next http.Handler) http.Handler {
	if a.cfg.MaxReads <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := a.readsNow.Add(1); n > int64(a.cfg.MaxReads) {
			a.readsNow.Add(-1)
			w.Header().Set("Retry-After", "1")
			e := errorf("limit-reached", "this replica is serving its maximum of %d reads at once (limit concurrent_reads); retry shortly", a.cfg.MaxReads)
			e.ext = map[string]any{"limit": "concurrent_reads"}
			a.writeError(w, r, e)
			return
		}
		defer a.readsNow.Add(-1)
		next.ServeHTTP(w, r)
	})
}

// clientAddr is the address a request is rate-limited by: its remote
// address or, when that is a trusted proxy, the right-most address of
// X-Forwarded-For that is not a trusted proxy (the left-most ones are
// whatever the client chose to send).
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := parseAddr(r.RemoteAddr)
	if !isTrusted(addr, trusted) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := parseAddr(strings.TrimSpace(hops[i]))
		if !hop.IsValid() {
			break
		}
		addr = hop
		if !isTrusted(hop, trusted) {
			break
		}
	}
	return addr
}

// parseAddr parses "ip", "ip:port" or "[ip]:port"; the zero Addr if none.
func parseAddr(s string) netip.Addr {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if a.IsValid() && p.Contains(a) {
			return true
		}
	}
	return false
}
