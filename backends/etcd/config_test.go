package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/gateway"
	"github.com/electorhq/elector/internal/fielderr"
)

// TestConfigValidateNamesTheFieldAtFault: each value that cannot work is
// refused as a *fielderr.Error naming its field and wrapping
// gateway.ErrInvalid, by Validate and by New before it dials; zero values
// take their defaults.
func TestConfigValidateNamesTheFieldAtFault(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"nested prefix", Config{Prefix: "apps/elector"}, ""},
		{"client certificate", Config{CertFile: "c.pem", KeyFile: "k.pem"}, ""},
		{"prefix ending in a slash", Config{Prefix: "elector/"}, "Prefix"},
		{"prefix with an empty segment", Config{Prefix: "apps//elector"}, "Prefix"},
		{"certificate without key", Config{CertFile: "c.pem"}, "CertFile"},
		{"key without certificate", Config{KeyFile: "k.pem"}, "KeyFile"},
		{"empty endpoint", Config{Endpoints: []string{"127.0.0.1:2379", ""}}, "Endpoints"},
		{"negative dial timeout", Config{DialTimeout: -time.Second}, "DialTimeout"},
		{"negative request timeout", Config{RequestTimeout: -time.Second}, "RequestTimeout"},
		{"negative member timeout", Config{MemberTimeout: -time.Second}, "MemberTimeout"},
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
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, gateway.ErrInvalid) {
				t.Fatalf("Validate: %v; want gateway.ErrInvalid naming %s", err, tt.field)
			}
			if b, err := New(tt.cfg); !errors.As(err, &fe) || fe.Field != tt.field {
				if b != nil {
					_ = b.Close()
				}
				t.Fatalf("New: %v; want the error naming %s", err, tt.field)
			}
		})
	}
}
