package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeServesMetricsAndHonoursElectionLabels scrapes a running serve:
// its campaign shows in the per-election series, with the election label
// by default and without it when metrics.election_labels is false.
func TestServeServesMetricsAndHonoursElectionLabels(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"labels", nil, `elector_leaders{election="billing"} 1`},
		{"no labels", []string{"--metrics-election-labels=false"}, "elector_leaders 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, logs, stop := startServe(t, append([]string{"--backend-kind", "memory"}, tc.extra...)...)
			c := &http.Client{}
			if code := call(t, c, "POST", base+"/v1/elections/billing/candidates", `{"id":"a"}`, nil, nil); code != http.StatusCreated {
				t.Fatalf("campaign: %d; logs:\n%s", code, logs)
			}
			res, err := c.Get(base + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			text := string(body)
			for _, want := range []string{tc.want, `elector_backend_operation_duration_seconds_count{op="campaign"} 1`, "go_goroutines "} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q in /metrics", want)
				}
			}
			if code := stop(); code != 0 {
				t.Fatalf("exit %d; logs:\n%s", code, logs)
			}
		})
	}
}
