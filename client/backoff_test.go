package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryDelayDoublesWithJitterAndHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		failures   int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{name: "first failure, no jitter", failures: 1, want: 50 * time.Millisecond},
		{name: "first failure, most jitter", failures: 1, jitter: 0.999, want: 99950 * time.Microsecond},
		{name: "third failure doubles twice", failures: 3, jitter: 0.5, want: 300 * time.Millisecond},
		{name: "capped at the limit", failures: 40, jitter: 0.999, want: 1999 * time.Millisecond},
		{name: "Retry-After lengthens the wait", failures: 1, retryAfter: time.Second, want: time.Second},
		{name: "Retry-After is capped at the limit", failures: 1, retryAfter: time.Hour, want: 2 * time.Second},
		{name: "a shorter Retry-After does not shorten it", failures: 3, retryAfter: time.Millisecond, want: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryDelay(100*time.Millisecond, 2*time.Second, tt.failures, tt.retryAfter, tt.jitter); got != tt.want {
				t.Errorf("retryDelay = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, value string
		want        time.Duration
	}{
		{name: "absent", value: "", want: 0},
		{name: "seconds", value: "2", want: 2 * time.Second},
		{name: "date", value: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second},
		{name: "past date", value: now.Add(-time.Minute).Format(http.TimeFormat), want: 0},
		{name: "garbage", value: "soon", want: 0},
		{name: "negative", value: "-3", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRetryAfter(tt.value, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.value, got, tt.want)
			}
		})
	}
}

// A leader's back-off leaves it a try before its step-down deadline: at
// most half the time left (at least leaderRetryFloor); a follower's is the
// plain back-off.
func TestLeaderRetriesBeforeItsStepDownDeadline(t *testing.T) {
	const ttl = 15 * time.Second // interval 5s, retry base 1.5s, step-down 13.5s after the last success
	sent := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		leading  bool
		failures int // before this one
		since    time.Duration
		want     time.Duration
	}{
		{name: "follower, third failure: the back-off", failures: 2, since: 9500 * time.Millisecond, want: 5 * time.Second},
		{name: "leader, first failure: the back-off is shorter", leading: true, failures: 0, since: 5 * time.Second, want: 1500 * time.Millisecond},
		{name: "leader, third failure: half the time left", leading: true, failures: 2, since: 9500 * time.Millisecond, want: 2 * time.Second},
		{name: "leader near its deadline: the floor", leading: true, failures: 5, since: 13450 * time.Millisecond, want: leaderRetryFloor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCandidacy(CandidacyConfig{Gateways: []string{"http://127.0.0.1:1"}, Election: "e", ID: "a", TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			c.token, c.leading, c.sentOK, c.failures = "t", tt.leading, sent, tt.failures
			c.now = func() time.Time { return sent.Add(tt.since) }
			c.jitter = func() float64 { return 1 } // the longest wait of each step
			if got := c.retry(context.Background(), "heartbeat", errors.New("unavailable")); got != tt.want {
				t.Errorf("retry = %s, want %s", got, tt.want)
			}
		})
	}
}
