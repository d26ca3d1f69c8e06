package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/electorhq/elector/internal/fielderr"
)

// TestConfigValidateNamesTheFieldAtFault: each value that cannot work is
// refused as a *fielderr.Error naming its field and wrapping ErrInvalid;
// zero values take their defaults or turn a cap off.
func TestConfigValidateNamesTheFieldAtFault(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"zero ttl bounds take the defaults", Config{DefaultTTL: 5 * time.Second}, ""},
		{"caps off", Config{MaxCandidates: 0, MaxElections: 0, IdleElectionExpiry: 0}, ""},
		{"min ttl below the bound", Config{MinTTL: time.Microsecond, DefaultTTL: time.Second}, "MinTTL"},
		{"negative min ttl", Config{MinTTL: -time.Second}, "MinTTL"},
		{"max ttl below min", Config{MinTTL: time.Minute, MaxTTL: time.Second}, "MaxTTL"},
		{"default ttl above max", Config{DefaultTTL: 2 * time.Hour}, "DefaultTTL"},
		{"default ttl below min", Config{DefaultTTL: time.Millisecond}, "DefaultTTL"},
		{"tiny metadata bound", Config{MaxMetadataBytes: 1}, "MaxMetadataBytes"},
		{"huge metadata bound", Config{MaxMetadataBytes: MaxMetadataBytesBound + 1}, "MaxMetadataBytes"},
		{"negative candidate cap", Config{MaxCandidates: -1}, "MaxCandidates"},
		{"negative election cap", Config{MaxElections: -1}, "MaxElections"},
		{"negative hub", Config{HubEvents: -1}, "HubEvents"},
		{"negative idle expiry", Config{IdleElectionExpiry: -time.Second}, "IdleElectionExpiry"},
		{"idle expiry past a year", Config{IdleElectionExpiry: MaxIdleElectionExpiry + time.Second}, "IdleElectionExpiry"},
		{"negative cooldown", Config{Defaults: &Settings{ErrorCooldown: -time.Second}}, "Defaults.ErrorCooldown"},
		{"long handover delay", Config{Defaults: &Settings{HandoverDelay: 2 * MaxSetting}}, "Defaults.HandoverDelay"},
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
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate: %v; want ErrInvalid naming %s", err, tt.field)
			}
		})
	}
}
