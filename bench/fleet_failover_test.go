package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/electorhq/elector/api"
)

// fleetFailover: a leader of TTL 2s that stops heartbeating (as a crashed
// one does) and a follower, 10 rounds on one elector serve started for
// them, the first round being the first expiry after the start. A round's
// failover runs from the leader's last heartbeat being sent to the
// follower's leader.begin arriving on the election's event stream.
func fleetFailover(t *testing.T) string {
	const rounds, ttl = 10, 2 * time.Second
	srv := startServe(t, "")
	c := newClient(4)
	var over []time.Duration
	for r := range rounds {
		election := fmt.Sprintf("failover-%d", r)
		tokA, err := electorCampaign(c, srv.URL, election, "a", ttl.String())
		if err != nil {
			t.Fatal(err)
		}
		tokB, err := electorCampaign(c, srv.URL, election, "b", "30s")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		begun, err := openSSE(sseClient(), srv.URL+"/v1/elections/"+election+"/events", "leader.begin")(ctx, &wg)
		if err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		if err := call(c, "PUT", srv.URL+"/v1/elections/"+election+"/candidates/a/heartbeat", http.Header{api.TokenHeader: {tokA}}, nil, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case at, ok := <-begun:
			if !ok {
				t.Fatalf("round %d: the event stream ended before b led", r)
			}
			over = append(over, at.Sub(sent)-ttl)
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: b did not lead within 30s", r)
		}
		cancel()
		wg.Wait()
		_ = call(c, "DELETE", srv.URL+"/v1/elections/"+election+"/candidates/b", http.Header{api.TokenHeader: {tokB}}, nil, nil)
	}
	sorted := slices.Clone(over)
	slices.Sort(sorted)
	var each []string
	for _, d := range over {
		each = append(each, fmt.Sprintf("%+d", d.Milliseconds()))
	}
	tb := &table{title: fmt.Sprintf("Failover after a crashed leader, TTL %s, %d rounds", ttl, rounds)}
	tb.add("system", "first after start", "median", "worst", "every round (ms past the TTL)")
	tb.add("elector serve (embedded, defaults)", "TTL "+signedMS(over[0]), "TTL "+signedMS(sorted[len(sorted)/2]), "TTL "+signedMS(sorted[len(sorted)-1]), strings.Join(each, ", "))
	return tb.String()
}

func signedMS(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("− %d ms", -d.Milliseconds())
	}
	return fmt.Sprintf("+ %d ms", d.Milliseconds())
}
