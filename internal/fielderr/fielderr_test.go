package fielderr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestNameRenamesTheFieldAndTheFieldsItMentions(t *testing.T) {
	err := Errorf("ClaimTTL", "%s is less than twice {RequestTimeout} (%s); see {Defaults.X}", "15s", "10s")
	keys := map[string]string{"ClaimTTL": "webhooks.claim_ttl", "RequestTimeout": "webhooks.request_timeout"}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"go names", err.Error(), "ClaimTTL: 15s is less than twice RequestTimeout (10s); see Defaults.X"},
		{"keys, an unknown field keeps its go name", err.Name(func(f string) string { return keys[f] }),
			"webhooks.claim_ttl: 15s is less than twice webhooks.request_timeout (10s); see Defaults.X"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestErrorWrapsItsSentinelThroughContext(t *testing.T) {
	sentinel := errors.New("invalid")
	err := fmt.Errorf("gateway: %w", Errorf("MinTTL", "%s is below 1ms", "0s").Wrap(sentinel))
	var fe *Error
	if !errors.Is(err, sentinel) || !errors.As(err, &fe) || fe.Field != "MinTTL" {
		t.Fatalf("%v: want the sentinel and the field error inside", err)
	}
	if !strings.HasPrefix(err.Error(), "gateway: MinTTL: ") {
		t.Errorf("message %q", err)
	}
}
