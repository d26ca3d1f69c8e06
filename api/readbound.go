package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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
		ctx := &boundedRead{Context: r.Context(), deadline: time.Now().Add(ReadTimeout)}
		defer ctx.end()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// boundedRead is the context of a read: its parent's, with ReadTimeout's
// deadline, whose timer starts only once something waits on the context
// (Done, Err, or a context derived from it). A read the cache answers
// waits on nothing, and a timer set and stopped for each would be a
// twentieth of its CPU. It is otherwise context.WithDeadline's: the same
// deadline, the same errors, cancelled when its parent is.
type boundedRead struct {
	context.Context // the parent, for its values
	deadline        time.Time

	once    sync.Once
	timed   context.Context // context.WithDeadline(parent, deadline), once asked for
	cancel  context.CancelFunc
	started atomic.Bool // timed is the deadline's context
}

// waited returns the context with the deadline's timer, started at the
// first call.
func (c *boundedRead) waited() context.Context {
	c.once.Do(func() {
		c.timed, c.cancel = context.WithDeadline(c.Context, c.deadline)
		c.started.Store(true)
	})
	return c.timed
}

// Value is the parent's, through the deadline's context once it started:
// a context derived from this one then finds that context's cancellation
// (the package context's own lookup) and is cancelled with it, rather
// than by a goroutine of its own.
func (c *boundedRead) Value(key any) any {
	if c.started.Load() {
		return c.timed.Value(key)
	}
	return c.Context.Value(key)
}

func (c *boundedRead) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *boundedRead) Done() <-chan struct{} { return c.waited().Done() }
func (c *boundedRead) Err() error            { return c.waited().Err() }

// end releases the timer, if one started, when the read is answered;
// from then on the context is cancelled.
func (c *boundedRead) end() {
	c.once.Do(func() { c.timed = endedRead })
	if c.cancel != nil {
		c.cancel()
	}
}

// endedRead is the context of a read answered before anything waited.
var endedRead = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
