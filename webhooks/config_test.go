package webhooks

import (
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// TestConfigValidateNamesTheFieldAtFault: each value that cannot work is
// refused as a *fielderr.Error naming its field; zero values take their
// defaults.
func TestConfigValidateNamesTheFieldAtFault(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"no retries", Config{RetrySchedule: []time.Duration{}}, ""},
		{"longest request timeout", Config{RequestTimeout: MaxRequestTimeout}, ""},
		{"negative request timeout", Config{RequestTimeout: -time.Second}, "RequestTimeout"},
		{"short request timeout", Config{RequestTimeout: time.Millisecond}, "RequestTimeout"},
		{"long request timeout", Config{RequestTimeout: MaxRequestTimeout + 1}, "RequestTimeout"},
		{"short begin timeout", Config{BeginTimeout: time.Millisecond}, "BeginTimeout"},
		{"long begin timeout", Config{BeginTimeout: MaxBeginTimeout + 1}, "BeginTimeout"},
		{"too many retries", Config{RetrySchedule: make([]time.Duration, MaxRetries+1)}, "RetrySchedule"},
		{"short retry wait", Config{RetrySchedule: []time.Duration{time.Second, time.Millisecond}}, "RetrySchedule"},
		{"long retry wait", Config{RetrySchedule: []time.Duration{MaxRetryWait + 1}}, "RetrySchedule"},
		{"short claim", Config{ClaimTTL: time.Millisecond}, "ClaimTTL"},
		{"claim shorter than two attempts", Config{RequestTimeout: time.Minute, ClaimTTL: time.Minute}, "ClaimTTL"},
		{"negative poll", Config{PollInterval: -1}, "PollInterval"},
		{"negative kept deliveries", Config{KeepDeliveries: -1}, "KeepDeliveries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate: %v; want an error naming %s", err, tt.field)
			}
		})
	}
}
