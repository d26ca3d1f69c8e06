package bench

import (
	"strings"
	"testing"
	"time"
)

func TestWriteTextListsOperationsAndErrorsByTypeAndStatus(t *testing.T) {
	s := Summary{
		Gateways: []string{"http://127.0.0.1:8080"}, Prefix: "bench-x",
		Candidates: 2, Elections: 1, Connections: 2, Subscribers: 1,
		TTLSeconds: 10, IntervalSecs: 10.0 / 3, DurationSecs: 30,
		Operations: map[string]Operation{
			"heartbeat": {Count: 18, Errors: 1, Rate: 0.6, Latency: Latency{P50: 0.4, P90: 0.9, P99: 1.5, Max: 2}},
		},
		Errors: Errors{Total: 1,
			ByType:   map[string]uint64{"urn:elector:problem:candidate-not-found": 1},
			ByStatus: map[string]uint64{"404": 1}},
		Leaders: 1, Resigned: 2,
	}
	var b strings.Builder
	if err := WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2 candidates in 1 election, TTL 10s (heartbeat every 3.333s)",
		"heartbeat          18     0.6  0.40ms  0.90ms  1.50ms  2.00ms       1",
		"1  urn:elector:problem:candidate-not-found",
		"1  404",
		"resigned 2 of 2 candidates",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
}

func TestProgressLineGivesRatesSinceThePreviousSnapshot(t *testing.T) {
	prev := Progress{Elapsed: time.Second}
	prev.Ops[Heartbeat] = 100
	cur := Progress{Elapsed: 3 * time.Second, Leaders: 4, Errors: 2}
	cur.Ops[Heartbeat] = 700
	cur.Ops[Event] = 10
	got := ProgressLine(prev, cur)
	for _, want := range []string{"3s", "heartbeats 300/s", "events 5.0/s", "leaders 4", "errors 2"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
