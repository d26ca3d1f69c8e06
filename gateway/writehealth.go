package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Readiness follows the write path. A backend can answer a ping and still
// not take writes: a member of an embedded NATS cluster whose liveness
// stream lost its leader answers stream info while every heartbeat times
// out until the others elect a new one. Ready therefore also looks at the
// writes this replica sent lately: after writeFailuresToUnready of them in
// a row failed for want of the backend (ErrUnavailable, or their deadline
// passed) with none answered since, the replica is not ready until a write
// is answered again or writeFailureMemory passes after the last failure
// (then it tries again, as a load balancer that sent it no traffic
// meanwhile would). A write the backend refused (a wrong token, a
// candidate gone, a conflict) was answered: the path works.
const (
	writeFailuresToUnready = 2
	writeFailureMemory     = 5 * time.Second
)

// writeOps are the operations that write through the backend.
var writeOps = map[string]bool{
	"campaign": true, "heartbeat": true, "resign": true, "report_error": true, "fail_leader": true,
	"configure": true, "delete_election": true, "transfer": true, "handover": true, "cancel_transfer": true,
	"open_session": true, "keep_session": true, "close_session": true,
}

// writeHealth remembers how this replica's recent writes went. Safe for
// concurrent use.
type writeHealth struct {
	mu       sync.Mutex
	failures int       // writes failed for want of the backend since one was answered
	last     time.Time // when the last of them failed
	err      error     // its error
}

// record notes the outcome err of write op at now. Writes the caller
// abandoned (context.Canceled: the client went away) tell nothing.
func (w *writeHealth) record(op string, now time.Time, err error) {
	if !writeOps[op] || errors.Is(err, context.Canceled) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || !(errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)) {
		w.failures, w.err = 0, nil
		return
	}
	w.failures++
	w.last, w.err = now, err
}

// BackendCall implements Observer: the Gateway observes its backend with
// its writeHealth.
func (w *writeHealth) BackendCall(op string, _ time.Duration, err error) {
	if writeOps[op] { // a read costs no clock reading
		w.record(op, time.Now(), err)
	}
}

// check returns an error wrapping ErrUnavailable while writes are failing
// (see writeFailuresToUnready), else nil.
func (w *writeHealth) check(now time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failures < writeFailuresToUnready || now.Sub(w.last) >= writeFailureMemory {
		return nil
	}
	return fmt.Errorf("gateway: the last %d writes through the backend failed, the latest %s ago (%v): %w",
		w.failures, now.Sub(w.last).Round(time.Millisecond), w.err, ErrUnavailable)
}
