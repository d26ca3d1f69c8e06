package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/eventually"
	"go.uber.org/goleak"
)

// TestManyRequestsLeaveNothingBehind drives many requests of every kind
// that reads or streams — campaigns into new elections, lists, leader reads,
// event streams opened and closed, fresh and resumed — and checks that the
// gateway is left as it was found: no goroutine (no hub pump, no backend
// watch) outlives its request, and campaigns still succeed afterwards.
// ELECTOR_LONG_TESTS=1 makes it 10,000 of each.
func TestManyRequestsLeaveNothingBehind(t *testing.T) {
	n := 500
	if os.Getenv("ELECTOR_LONG_TESTS") != "" {
		n = 10000
	}
	e := newEnv(t, Config{})
	c := e.srv.Client()
	ctx := context.Background()
	get := func(path string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		_, _ = bufio.NewReader(res.Body).Discard(1 << 20)
		return res.StatusCode
	}
	campaign := func(election string) string {
		res, err := c.Post(e.srv.URL+"/v1/elections/"+election+"/candidates", "application/json", strings.NewReader(`{"id":"a","ttl":"1h"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("campaign into %s: %d", election, res.StatusCode)
		}
		return election
	}
	// stream opens an event stream, reads until the first event (the reset
	// snapshot, or the connected comment of a stream that resumes) and
	// hangs up.
	stream := func(path, lastID string) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() && !strings.HasPrefix(sc.Text(), ": connected") {
		}
	}

	campaign("warm-up")
	stream("/v1/elections/warm-up/events", "")
	e.following()
	c.CloseIdleConnections()
	before := goleak.IgnoreCurrent()

	for i := range n {
		campaign(fmt.Sprintf("leak-%d", i))
	}
	for i := range n {
		if s := get("/v1/elections/leak-" + fmt.Sprint(i%n) + "/leader"); s != http.StatusOK {
			t.Fatalf("leader: %d", s)
		}
	}
	lists := max(n/10, 1) // a list of n elections costs n: keep the test's time linear
	for range lists {
		if s := get("/v1/elections"); s != http.StatusOK {
			t.Fatalf("list: %d", s)
		}
	}
	for i := range n {
		switch i % 3 {
		case 0:
			stream("/v1/elections/leak-"+fmt.Sprint(i)+"/events", "")
		case 1:
			stream("/v1/events", "")
		default:
			stream("/v1/events", "1") // resumed from before the ring: a backend watch each
		}
	}
	c.CloseIdleConnections()
	noGoroutineLeft(t, before)
	campaign("after-the-load")
}

// noGoroutineLeft waits until every goroutine started since before (a
// goleak.IgnoreCurrent) has ended, and fails the test with the ones left
// if some have not after the deadline. Teardown is asynchronous (the
// server notices a hang-up, the handler returns, the watch's context
// ends): the deadline bounds a real leak, it is not how long teardown is
// expected to take.
func noGoroutineLeft(t *testing.T, before goleak.Option) {
	t.Helper()
	eventually.NoError(t, 20*time.Second, "every goroutine of the request to end", func() error { return goleak.Find(before) })
}
