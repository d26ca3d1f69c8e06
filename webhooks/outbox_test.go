package webhooks

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/eventually"
)

func TestFailingReceiverGetsEachEventOnceInOrder(t *testing.T) {
	t.Parallel()
	const failures = 3
	e := newEnv(t)
	rc := newReceiver(t, func(n int, _ *http.Request, _ http.ResponseWriter) int {
		if n < failures {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	})
	s, _ := e.service(testConfig())
	ep, secret := subscribe(t, s, "billing", rc.srv.URL+"/hook?token=abc")

	e.campaign("billing", "node-a") // candidate.joined, leader.begin
	e.campaign("billing", "node-b") // candidate.joined

	ds := s.settled(t, ep.ID, 3)
	all, ok := rc.requests(), rc.successes()
	if len(ok) != 3 {
		t.Fatalf("%d successful deliveries, want 3 (each event once)", len(ok))
	}
	want := []struct {
		typ gateway.EventType
		id  string
	}{{gateway.EventCandidateJoined, "node-a"}, {gateway.EventLeaderBegin, "node-a"}, {gateway.EventCandidateJoined, "node-b"}}
	seen := map[string]bool{}
	last := uint64(0)
	for i, r := range ok {
		p := r.payload(t)
		if p.Type != want[i].typ || p.Data.Candidate.ID != want[i].id {
			t.Errorf("delivery %d: %s of %s, want %s of %s", i, p.Type, p.Data.Candidate.ID, want[i].typ, want[i].id)
		}
		if seen[r.ID] {
			t.Errorf("webhook-id %s succeeded twice", r.ID)
		}
		seen[r.ID] = true
		n, _ := strconv.ParseUint(r.ID, 10, 64)
		if n <= last {
			t.Errorf("webhook-id %s after %d: out of order", r.ID, last)
		}
		last = n
	}
	// Every attempt of the first event carried the same webhook-id, and a
	// valid signature.
	for i := 0; i <= failures; i++ {
		if all[i].ID != ok[0].ID {
			t.Errorf("attempt %d had webhook-id %s, want %s", i+1, all[i].ID, ok[0].ID)
		}
		ts, _ := strconv.ParseInt(all[i].Timestamp, 10, 64)
		if err := Verify([]string{secret}, all[i].Header, all[i].Body, time.Unix(ts, 0), 0); err != nil {
			t.Errorf("attempt %d: signature: %v", i+1, err)
		}
	}
	// The delivery log shows the N+1 attempts of the first event.
	first := ds[len(ds)-1] // newest first
	if first.EventID != ok[0].ID || first.Status != StatusSucceeded || len(first.Attempts) != failures+1 {
		t.Fatalf("first delivery: event %s, %s, %d attempts; want %s, succeeded, %d", first.EventID, first.Status, len(first.Attempts), ok[0].ID, failures+1)
	}
	for i, a := range first.Attempts {
		wantStatus := http.StatusInternalServerError
		if i == failures {
			wantStatus = http.StatusNoContent
		}
		if a.StatusCode != wantStatus || a.At.IsZero() || (i < failures && a.Error == "") {
			t.Errorf("attempt %d: %+v, want status %d", i+1, a, wantStatus)
		}
	}
}

func TestSubscriptionFiltersByType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	s, _ := e.service(testConfig())
	ep, _ := subscribe(t, s, "filtered", rc.srv.URL, gateway.EventLeaderBegin, gateway.EventLeaderEnd)
	tok := e.campaign("filtered", "a")
	e.campaign("filtered", "b")
	if err := e.gw.Resign(context.Background(), "filtered", "a", tok); err != nil {
		t.Fatal(err)
	}
	s.settled(t, ep.ID, 3) // begin, end, begin
	var got []string
	for _, r := range rc.successes() {
		p := r.payload(t)
		got = append(got, string(p.Type)+":"+p.Data.Candidate.ID)
	}
	want := []string{"leader.begin:a", "leader.end:a", "leader.begin:b"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestCrashedReplicaLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	rc.setRespond(func(int, *http.Request, http.ResponseWriter) int { return http.StatusServiceUnavailable })
	cfg := testConfig()
	cfg.RetrySchedule = []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
	kv := e.gw.KV()

	cfgA := cfg
	cfgA.Replica = "replica-a"
	a := New(e.gw, kv, cfgA)
	a.crash = true // its claims are not released: they must expire
	stopA := e.run(a)
	ep, _ := subscribe(t, a, "ha", rc.srv.URL)
	eventually.True(t, 5*time.Second, "replica a claims the endpoint", func() bool {
		c, _, err := getJSON[cursorRecord](context.Background(), kv, cursorKey(ep.ID))
		return err == nil && c.Replica == "replica-a"
	})

	gwB := gateway.New(e.b, gateway.Config{Logger: quiet()}) // a second replica over the same backend
	cfgB := cfg
	cfgB.Replica = "replica-b"
	b := New(gwB, kv, cfgB)
	e.run(b)

	e.campaign("ha", "x")
	e.campaign("ha", "y")
	eventually.True(t, 5*time.Second, "replica a tries while the receiver is down", func() bool { return len(rc.requests()) >= 2 })
	stopA()            // the crash: a stops in the middle of its retries
	rc.setRespond(nil) // the receiver comes back
	b.settled(t, ep.ID, 3)
	ok := rc.successes()
	if len(ok) != 3 {
		t.Fatalf("%d successes, want 3 (each event once)", len(ok))
	}
	seen := map[string]bool{}
	for _, r := range ok {
		if seen[r.ID] {
			t.Fatalf("event %s delivered twice as a success", r.ID)
		}
		seen[r.ID] = true
	}
	c, _, err := getJSON[cursorRecord](context.Background(), kv, cursorKey(ep.ID))
	if err != nil || c.Replica != "replica-b" || c.Last != ok[2].ID {
		t.Fatalf("cursor %+v, %v; want held by replica-b at %s", c, err, ok[2].ID)
	}
}

func TestShutdownReleasesClaimsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	kv := e.gw.KV()
	cfg := testConfig()
	cfg.ClaimTTL = time.Hour // a claim that is not released would stall the test
	cfg.Replica = "first"
	a, stopA := e.service(cfg)
	ep, _ := subscribe(t, a, "release", rc.srv.URL)
	eventually.True(t, 5*time.Second, "first claims", func() bool {
		c, _, err := getJSON[cursorRecord](context.Background(), kv, cursorKey(ep.ID))
		return err == nil && c.Replica == "first"
	})
	stopA()
	cfg.Replica = "second"
	e.service(cfg)
	e.campaign("release", "x")
	eventually.True(t, 5*time.Second, "second delivers", func() bool { return len(rc.successes()) >= 2 })
}

func TestCompactedCursorIsRecordedAsAGap(t *testing.T) {
	t.Parallel()
	// Neither the backend (1 event) nor the replica's hub (1) holds the
	// subscription's cursor by the time the worker starts.
	e := newEnvWith(t, gateway.Config{HubEvents: 1}, memory.WithHistory(1))
	rc := newReceiver(t, nil)
	kv := e.gw.KV()
	s := New(e.gw, kv, testConfig())
	ep, _ := subscribe(t, s, "gap", rc.srv.URL) // not running yet
	for _, id := range []string{"a", "b", "c", "d"} {
		e.campaign("gap", id)
	}
	e.run(s)
	eventually.True(t, 5*time.Second, "a gap record", func() bool {
		ds, _ := s.Deliveries(context.Background(), "gap", ep.ID, 0)
		return len(ds) == 1 && ds[0].Status == StatusGap && ds[0].Error != ""
	})
	e.campaign("gap", "e")
	eventually.True(t, 5*time.Second, "delivery continues after the gap", func() bool { return len(rc.successes()) == 1 })
}
