package api

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the write rate limit (Config.WriteRate, Config.WriteBurst).
const (
	DefaultWriteRate  = 20
	DefaultWriteBurst = 40
)

// limiterIdle is how long a client's bucket is kept after its last write;
// a full bucket is the same as a fresh one, so forgetting it loses nothing.
const limiterIdle = 5 * time.Minute

// writeLimiter is a token bucket per client for write requests. It needs
// no goroutine: idle buckets are swept while adding new ones.
type writeLimiter struct {
	rate    rate.Limit
	burst   int
	trusted []netip.Prefix

	mu        sync.Mutex
	clients   map[netip.Addr]*clientBucket
	lastSweep time.Time
}

type clientBucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// newWriteLimiter returns a limiter of perSecond writes with burst, or nil
// for no limit (perSecond <= 0).
func newWriteLimiter(perSecond float64, burst int, trusted []netip.Prefix) *writeLimiter {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = int(math.Ceil(perSecond))
	}
	return &writeLimiter{rate: rate.Limit(perSecond), burst: burst, trusted: trusted, clients: map[netip.Addr]*clientBucket{}}
}

// allow takes a token of client's bucket, or says how long until one is
// available.
func (l *writeLimiter) allow(client netip.Addr, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.clients[client]
	if !ok {
		if now.Sub(l.lastSweep) > limiterIdle {
			for k, v := range l.clients {
				if now.Sub(v.seen) > limiterIdle {
					delete(l.clients, k)
				}
			}
			l.lastSweep = now
		}
		b = &clientBucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.clients[client] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// isWrite reports whether method changes state.
func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// limitWrites wraps the handler of a write route with the per-client rate
// limit: over it, a 429 rate-limited problem with Retry-After.
func (a *api) limitWrites(method string, next http.Handler) http.Handler {
	if a.writes == nil || !isWrite(method) {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := a.writes.allow(clientAddr(r, a.writes.trusted), time.Now())
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			e := errorf("rate-limited", "this client sent more than %g writes per second (burst %d; limit writes_per_second); retry after %d s",
				float64(a.writes.rate), a.writes.burst, secs)
			e.ext = map[string]any{"limit": "writes_per_second"}
			a.writeError(w, r, e)
			return
		}
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
