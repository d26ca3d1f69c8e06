package api

import (
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// TestConfigValidateNamesTheFieldAtFault: each value that cannot work is
// refused as a *fielderr.Error naming its field; zero values take their
// defaults or leave limits off.
func TestConfigValidateNamesTheFieldAtFault(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"limits on", Config{WriteRate: 0.5, ReadRate: 10, ReadBurst: 20, HeartbeatRate: 10, MaxReads: 1, MaxStreams: 1}, ""},
		{"smallest body", Config{MaxBodyBytes: MinBodyBytes}, ""},
		{"tiny body", Config{MaxBodyBytes: 10}, "MaxBodyBytes"},
		{"negative body", Config{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{"short body timeout", Config{BodyTimeout: time.Microsecond}, "BodyTimeout"},
		{"short keep-alive", Config{KeepAlive: 10 * time.Millisecond}, "KeepAlive"},
		{"short retry hint", Config{RetryHint: time.Millisecond}, "RetryHint"},
		{"negative write rate", Config{WriteRate: -1}, "WriteRate"},
		{"negative write burst", Config{WriteBurst: -1}, "WriteBurst"},
		{"negative heartbeat rate", Config{HeartbeatRate: -1}, "HeartbeatRate"},
		{"negative heartbeat burst", Config{HeartbeatBurst: -1}, "HeartbeatBurst"},
		{"negative read rate", Config{ReadRate: -1}, "ReadRate"},
		{"negative read burst", Config{ReadBurst: -1}, "ReadBurst"},
		{"negative reads", Config{MaxReads: -1}, "MaxReads"},
		{"negative streams", Config{MaxStreams: -1}, "MaxStreams"},
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
