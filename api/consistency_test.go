package api

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/electorhq/elector/gateway"
)

func TestReadContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		local bool
		field string // of the refusal; "" for none
	}{
		{"", false, ""},
		{"consistency=linearizable", false, ""},
		{"consistency=local", true, ""},
		{"other=1&consistency=local", true, ""},
		{"other=1", false, ""},
		{"consistency=", false, "consistency"},
		{"consistency", false, "consistency"},
		{"consistency=Local", false, "consistency"},
		{"consistency=stale", false, "consistency"},
		{"consistency=local&consistency=linearizable", false, "consistency"},
		{"consistency=%6Cocal", true, ""},
		{"consistency=%ZZ", false, "consistency"},
		{"consistency=local;x=1", false, "query"},
		{"a;b", false, ""},   // no consistency: not parsed, as before
		{"x=%ZZ", false, ""}, // likewise
		{"x=%ZZ&consistency=local", false, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/elections/e/leader?"+tt.query, nil)
			ctx, err := readContext(r)
			var ve *gateway.ValidationError
			switch {
			case tt.field != "" && (!errors.As(err, &ve) || ve.Field != tt.field):
				t.Fatalf("readContext: %v, want a validation error of %q", err, tt.field)
			case tt.field == "" && err != nil:
				t.Fatalf("readContext: %v", err)
			case err == nil && gateway.LocalRead(ctx) != tt.local:
				t.Fatalf("local read: %v, want %v", gateway.LocalRead(ctx), tt.local)
			}
		})
	}
}

// FuzzReadQuery: whatever the query string, readContext answers a context
// or a validation error, never panics, and makes a read local only when
// the query asks for it once and exactly.
func FuzzReadQuery(f *testing.F) {
	for _, s := range []string{"", "consistency=local", "consistency=linearizable", "consistency=%ZZ", "a=1;b=2", "consistency=local&consistency=local", "%", "consistency=lo%00cal"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := httptest.NewRequest("GET", "/v1/elections/e/leader", nil)
		r.URL.RawQuery = raw
		ctx, err := readContext(r)
		if err != nil {
			var ve *gateway.ValidationError
			if !errors.As(err, &ve) || ve.Field == "" {
				t.Fatalf("readContext(%q): %v, want a validation error naming a field", raw, err)
			}
			return
		}
		if !strings.Contains(raw, "consistency") {
			if gateway.LocalRead(ctx) {
				t.Fatalf("readContext(%q): a local read without consistency", raw)
			}
			return
		}
		q, perr := url.ParseQuery(raw)
		if perr != nil {
			t.Fatalf("readContext(%q) accepted a query naming consistency that url.ParseQuery refuses: %v", raw, perr)
		}
		want := len(q["consistency"]) == 1 && q.Get("consistency") == "local"
		if gateway.LocalRead(ctx) != want {
			t.Fatalf("readContext(%q): local %v, want %v", raw, gateway.LocalRead(ctx), want)
		}
	})
}
