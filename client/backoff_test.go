package client

import (
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
