package api

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

type readKey struct{}

// A read's context is context.WithDeadline's: its deadline passes, its
// parent's cancellation and values reach it, and it ends with the read;
// it only starts its timer when something waits on it.
func TestBoundedReadIsADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := context.WithValue(t.Context(), readKey{}, "v")
		c := &boundedRead{Context: parent, deadline: time.Now().Add(ReadTimeout)}
		if d, ok := c.Deadline(); !ok || !d.Equal(time.Now().Add(ReadTimeout)) {
			t.Errorf("deadline %v %v, want %v", d, ok, time.Now().Add(ReadTimeout))
		}
		if c.Value(readKey{}) != "v" {
			t.Error("the parent's value is lost")
		}
		if c.timed != nil {
			t.Fatal("a timer started before anything waited")
		}
		start := time.Now()
		<-c.Done()
		if waited := time.Since(start); waited != ReadTimeout || !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("done after %v with %v, want %v and %v", waited, c.Err(), ReadTimeout, context.DeadlineExceeded)
		}
		c.end()
	})
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(t.Context())
		c := &boundedRead{Context: parent, deadline: time.Now().Add(ReadTimeout)}
		done := c.Done()
		cancel()
		<-done
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("parent cancelled: %v, want %v", c.Err(), context.Canceled)
		}
		c.end()
	})
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		c := &boundedRead{Context: parent, deadline: time.Now().Add(ReadTimeout)}
		if d, _ := c.Deadline(); !d.Equal(time.Now().Add(time.Second)) {
			t.Errorf("deadline %v, want the parent's earlier one", d)
		}
		c.end()
		if c.timed != endedRead || !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("a read answered before anything waited: %v, want cancelled without a timer", c.Err())
		}
		select {
		case <-c.Done():
		default:
			t.Error("a read's context is not done once the read is answered")
		}
	})
}

// A context derived from a read's is cancelled with it by the package
// context's own bookkeeping, as one derived from context.WithDeadline's
// is: no goroutine per derived context.
func TestBoundedReadsChildrenNeedNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &boundedRead{Context: t.Context(), deadline: time.Now().Add(ReadTimeout)}
		defer c.end()
		before := runtime.NumGoroutine()
		child, cancel := context.WithCancel(c)
		defer cancel()
		if n := runtime.NumGoroutine(); n != before {
			t.Errorf("deriving a context started %d goroutines, want none", n-before)
		}
		<-child.Done()
		if !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Errorf("a derived context at the read's deadline: %v, want %v", child.Err(), context.DeadlineExceeded)
		}
	})
}
