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

func TestInPrefixesTheFieldAndTheFieldsItMentions(t *testing.T) {
	sentinel := errors.New("invalid")
	inner := Errorf("ClaimTTL", "%s is less than twice {RequestTimeout}", "15s").Wrap(sentinel)
	err := inner.In("Webhooks")
	if err.Field != "Webhooks.ClaimTTL" || !errors.Is(err, sentinel) {
		t.Fatalf("In: field %q, wraps the sentinel: %v", err.Field, errors.Is(err, sentinel))
	}
	keys := map[string]string{"Webhooks.ClaimTTL": "webhooks.claim_ttl", "Webhooks.RequestTimeout": "webhooks.request_timeout"}
	if got, want := err.Name(func(f string) string { return keys[f] }), "webhooks.claim_ttl: 15s is less than twice webhooks.request_timeout"; got != want {
		t.Errorf("named %q, want %q", got, want)
	}
	if inner.Field != "ClaimTTL" || inner.Error() != "ClaimTTL: 15s is less than twice RequestTimeout" {
		t.Errorf("In changed the error it was called on: %v", inner)
	}
}
