package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/electorhq/elector/backends/memory"
	"github.com/electorhq/elector/bench"
	"github.com/electorhq/elector/client"
	"github.com/electorhq/elector/internal/servertest"
)

// benchReplicas starts n gateway replicas over one memory backend, each
// served on loopback without limits, until the test ends.
func benchReplicas(t *testing.T, n int) []string {
	t.Helper()
	b := memory.New()
	var urls []string
	for range n {
		urls = append(urls, servertest.Start(t, servertest.Backend(b), servertest.NoLimits()).URL)
	}
	return urls
}

func TestBenchDrivesEveryModeThenResignsEveryCandidate(t *testing.T) {
	urls := benchReplicas(t, 2)
	var stdout, stderr servertest.SyncBuffer
	code := run(context.Background(), []string{"bench",
		"--gateway", strings.Join(urls, ","), "--output", "json", "--prefix", "t",
		"--candidates", "12", "--elections", "3", "--ttl", "6s", "--connections", "4",
		"--subscribers", "2", "--readers", "1", "--burst", "6", "--burst-workers", "2",
		"--duration", "3s",
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr.String())
	}
	var sum bench.Summary
	if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	if sum.Errors.Total != 0 {
		t.Errorf("errors: %+v", sum.Errors)
	}
	for _, c := range []struct {
		kind     string
		min, max uint64
	}{
		{"campaign", 12, 12}, // no candidate expired and campaigned again
		{"heartbeat", 1, 1 << 20},
		{"resign", 12, 12},
		{"leader_read", 1, 1 << 30},
		{"burst_campaign", 6, 6},
		{"burst_resign", 6, 6},
		{"event", 1, 1 << 20},
	} {
		op := sum.Operations[c.kind]
		if op.Count < c.min || op.Count > c.max || op.Errors != 0 {
			t.Errorf("%s: %+v, want a count from %d to %d and no errors", c.kind, op, c.min, c.max)
		}
		if op.Count > 0 && (op.Latency.Max <= 0 || op.Latency.P50 > op.Latency.P99 || op.Latency.P99 > op.Latency.Max) {
			t.Errorf("%s: latency %+v", c.kind, op.Latency)
		}
	}
	if sum.Resigned != 12 || sum.Unresigned != 0 || sum.Leaders != 3 || sum.Removed != 9 || sum.Kept != "" {
		t.Errorf("resigned %d, unresigned %d, leaders %d, removed %d (%s): want 12, 0, 3, 9", sum.Resigned, sum.Unresigned, sum.Leaders, sum.Removed, sum.Kept)
	}
	// Afterwards nothing of the run is left, on either replica: its
	// elections are gone.
	elections := []string{"t-0", "t-1", "t-2"}
	for i := range 6 {
		elections = append(elections, fmt.Sprintf("t-b%d", i))
	}
	for _, u := range urls {
		c := client.New(u)
		for _, e := range elections {
			if _, err := c.Election(context.Background(), e); !errors.Is(err, client.ErrElectionNotFound) {
				t.Errorf("%s on %s: %v, want the election removed", e, u, err)
			}
		}
	}
}

func TestBenchTextSummaryNamesOperationsAndErrors(t *testing.T) {
	urls := benchReplicas(t, 1)
	var stdout, stderr servertest.SyncBuffer
	code := run(context.Background(), []string{"bench", "--gateway", urls[0], "--candidates", "0",
		"--subscribers", "0", "--burst", "4", "--duration", "1m"}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 || !strings.Contains(out, "burst_campaign") || !strings.Contains(out, "errors: none") {
		t.Fatalf("bench: exit %d, %q, %s", code, out, stderr.String())
	}
	if strings.Contains(out, "\r") {
		t.Errorf("progress written to a stdout that is no terminal: %q", out)
	}
}

func TestBenchRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gateway", "", "--candidates", "5"}, "no gateway URL"},
		{[]string{"--gateway", "ftp://x", "--candidates", "5"}, "not an absolute http(s) URL"},
		{[]string{"--gateway", "http://127.0.0.1:1", "--candidates", "-1"}, "candidates -1"},
		{[]string{"--gateway", "http://127.0.0.1:1", "--duration", "48h"}, "duration 48h0m0s"},
		{[]string{"--gateway", "http://127.0.0.1:1", "--output", "yaml"}, "--output \"yaml\""},
		{[]string{"--gateway", "http://127.0.0.1:1", "--prefix", "Bad!"}, "prefix \"Bad!\""},
		{[]string{"--gateway", "http://127.0.0.1:1", "--candidates", "0", "--subscribers", "0"}, "nothing to do"},
	} {
		t.Setenv(envGateway, "")
		var stdout, stderr servertest.SyncBuffer
		code := run(context.Background(), append([]string{"bench"}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("bench %v: exit %d, %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}
