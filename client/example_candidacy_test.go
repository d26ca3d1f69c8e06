package client_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/electorhq/elector/client"
)

// Run a job every so often, on whichever node leads, and only there: the
// job loop lives as long as the leadership's context.
func ExampleCandidacy() {
	srv, stop := startGateway() // an in-process gateway; use your gateway's URL
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cand, err := client.NewCandidacy(client.CandidacyConfig{
		Gateways: []string{srv.URL},
		Election: "nightly-report",
		ID:       "node-a",
		TTL:      5 * time.Second,
		OnStartedLeading: func(ctx context.Context, term uint64) {
			fmt.Println("leading with term", term)
			tick := time.NewTicker(10 * time.Millisecond) // say, every hour
			defer tick.Stop()
			for runs := 1; ; runs++ {
				select {
				case <-ctx.Done(): // leadership may be lost: stop at once
					return
				case <-tick.C:
					fmt.Println("report run", runs)
					if runs == 3 {
						cancel() // shut down: Run stops leading and resigns
						return
					}
				}
			}
		},
		OnStoppedLeading: func(term uint64, reason string) { fmt.Println("stopped leading:", reason) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cand.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// leading with term 1
	// report run 1
	// report run 2
	// report run 3
	// stopped leading: resigned
}

// fencedStore is a resource that takes writes only from the newest term
// it has seen, so that a leader that lost its leadership without knowing
// (paused, partitioned) cannot overwrite its successor's work.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

func (s *fencedStore) Put(term uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if term < s.highest {
		return fmt.Errorf("term %d is older than term %d", term, s.highest)
	}
	s.highest, s.value = term, value
	return nil
}

// Guard a resource with the term: each leader passes its term along with
// its writes, and the resource refuses those of an older term.
func ExampleCandidacy_fencing() {
	srv, stop := startGateway()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &fencedStore{}
	wrote := make(chan struct{})
	node := func(id string) *client.Candidacy {
		cand, _ := client.NewCandidacy(client.CandidacyConfig{
			Gateways: []string{srv.URL}, Election: "inventory", ID: id, TTL: 5 * time.Second,
			OnStartedLeading: func(ctx context.Context, term uint64) {
				if ctx.Err() == nil { // still within the step-down deadline
					fmt.Printf("%s writes with term %d: %v\n", id, term, store.Put(term, "written by "+id))
				}
				wrote <- struct{}{}
			},
		})
		return cand
	}
	var wg sync.WaitGroup
	a, b := node("node-a"), node("node-b")
	run := func(c *client.Candidacy) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Run(ctx)
		}()
	}
	run(a)
	<-wrote
	_ = a.Resign(ctx) // node-a hands over
	run(b)
	<-wrote

	// A write of node-a that was held up, say by a long pause, arrives now.
	fmt.Println("late write with term 1:", store.Put(1, "written late by node-a"))
	fmt.Println(store.value)
	cancel()
	wg.Wait()
	// Output:
	// node-a writes with term 1: <nil>
	// node-b writes with term 2: <nil>
	// late write with term 1: term 1 is older than term 2
	// written by node-b
}
