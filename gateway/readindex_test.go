package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestReadIndexCoalescesConcurrentReads: a burst of reads arriving while a
// fetch is in flight shares the next fetch, and each read gets a revision
// fetched after it arrived.
func TestReadIndexCoalescesConcurrentReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		var rev atomic.Uint64
		ri := NewReadIndex(func(context.Context) (uint64, error) {
			calls.Add(1)
			r := rev.Load() // the backend answers as of when the call reached it
			time.Sleep(10 * time.Millisecond)
			return r, nil
		})
		// The first read starts a fetch at once.
		rev.Store(1)
		first := make(chan uint64)
		go func() { r, _ := ri.Revision(t.Context()); first <- r }()
		synctest.Wait()
		// While it is in flight, a write lands and 100 reads arrive: they
		// must see the write, so they cannot share the fetch in flight.
		rev.Store(2)
		var wg sync.WaitGroup
		got := make([]uint64, 100)
		for i := range got {
			wg.Go(func() { got[i], _ = ri.Revision(t.Context()) })
		}
		if r := <-first; r != 1 {
			t.Errorf("first read: revision %d, want 1", r)
		}
		wg.Wait()
		for i, r := range got {
			if r != 2 {
				t.Fatalf("read %d: revision %d, want 2 (fetched before it arrived?)", i, r)
			}
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("%d fetches for 101 reads, want 2", n)
		}
	})
}

// TestReadIndexCallerGivesUp: a read whose context ends stops waiting with
// ErrUnavailable, and the fetch still serves the others.
func TestReadIndexCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		ri := NewReadIndex(func(context.Context) (uint64, error) { <-release; return 7, nil })
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		other := make(chan uint64)
		go func() { r, _ := ri.Revision(t.Context()); other <- r }()
		if _, err := ri.Revision(ctx); err == nil {
			t.Fatal("a read whose context ended got no error")
		}
		close(release)
		if r := <-other; r != 7 {
			t.Errorf("other read: %d, want 7", r)
		}
	})
}
