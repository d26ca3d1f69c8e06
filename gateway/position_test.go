package gateway_test

import (
	"cmp"
	"math"
	"testing"

	"github.com/electorhq/elector/gateway"
)

func TestParsePosition(t *testing.T) {
	tests := []struct {
		s    string
		want gateway.Position
		ok   bool
	}{
		{"42-3", gateway.Position{Rev: 42, Index: 3}, true},
		{"42-0", gateway.Position{Rev: 42, Index: 0}, true},
		{"42", gateway.After(42), true},
		{"0", gateway.After(0), true},
		{"0-0", gateway.Position{}, true},
		{"18446744073709551615", gateway.After(math.MaxUint64), true},
		{"18446744073709551616", gateway.Position{}, false},
		{"042", gateway.Position{}, false},
		{"42-03", gateway.Position{}, false},
		{"00", gateway.Position{}, false},
		{"", gateway.Position{}, false},
		{"-1", gateway.Position{}, false},
		{"42-", gateway.Position{}, false},
		{"42--1", gateway.Position{}, false},
		{"42-1-1", gateway.Position{}, false},
		{"+42", gateway.Position{}, false},
		{"4 2", gateway.Position{}, false},
		{"x-1", gateway.Position{}, false},
	}
	for _, tt := range tests {
		got, ok := gateway.ParsePosition(tt.s)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParsePosition(%q) = %+v, %v; want %+v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.s {
			t.Errorf("ParsePosition(%q).String() = %q", tt.s, got.String())
		}
	}
}

func TestPositionsOrderAsTheirEvents(t *testing.T) {
	in := []string{"6-0", "6-1", "6-2", "6", "7-0", "7-1", "7", "12-1"}
	for i := range in {
		for j := range in {
			p, _ := gateway.ParsePosition(in[i])
			q, _ := gateway.ParsePosition(in[j])
			if got, want := p.Compare(q), cmp.Compare(i, j); got != want {
				t.Errorf("%s.Compare(%s) = %d, want %d", in[i], in[j], got, want)
			}
		}
	}
}

// FuzzParsePosition: whatever it is given, ParsePosition does not panic,
// and what it accepts it gives back in the same spelling.
func FuzzParsePosition(f *testing.F) {
	for _, s := range []string{"42-3", "42", "0", "042", "1-", "-", "99999999999999999999-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := gateway.ParsePosition(s)
		if ok && p.String() != s {
			t.Fatalf("ParsePosition(%q) = %+v, written back as %q", s, p, p.String())
		}
	})
}
