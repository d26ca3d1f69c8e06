package gateway

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	tests := []struct {
		name     string
		election string
		id       string
		ok       bool
	}{
		{"plain", "billing", "node-a", true},
		{"digits and separators", "0_db-primary", "10.0.0.7:8080", true},
		{"longest election", strings.Repeat("a", 63), "x", true},
		{"longest id", "e", strings.Repeat("A", 128), true},
		{"empty election", "", "x", false},
		{"upper-case election", "Billing", "x", false},
		{"election too long", strings.Repeat("a", 64), "x", false},
		{"election starts with dash", "-a", "x", false},
		{"election with dot", "a.b", "x", false},
		{"election with slash", "a/b", "x", false},
		{"empty id", "e", "", false},
		{"id too long", "e", strings.Repeat("A", 129), false},
		{"id with space", "e", "node a", false},
		{"id dot-dot", "e", "..", false},
		{"id with slash", "e", "a/b", false},
		{"id unicode", "e", "nœud", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := errors.Join(ValidateElectionName(tt.election), ValidateCandidateID(tt.id))
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v does not match ErrInvalid", err)
			}
		})
	}
}

func TestCompactObject(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"null", "", true},
		{` { "addr" : "10.0.0.7:8080" } `, `{"addr":"10.0.0.7:8080"}`, true},
		{`[1,2]`, "", false},
		{`"s"`, "", false},
		{`{"a":`, "", false},
		{`{"a":"` + strings.Repeat("x", 40) + `"}`, "", false},
	}
	for _, tt := range tests {
		got, err := compactObject("metadata", []byte(tt.in), 32)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("compactObject(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzValidateCandidateID(f *testing.F) {
	for _, s := range []string{"node-a", "", "..", "a/b", "10.0.0.7:8080"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateCandidateID(id) != nil {
			return
		}
		// Anything accepted is safe in a URL path segment and in a NATS
		// subject token once encoded: no '/', no space, no '*' or '>'.
		if strings.ContainsAny(id, "/ *>\t\r\n%?#") || len(id) > 128 || id == "." || id == ".." {
			t.Fatalf("accepted %q", id)
		}
	})
}

// TestValidNameMatchesTheNameRules checks the hand-written matcher against
// the regular expressions the API documents, on names near every edge.
func TestValidNameMatchesTheNameRules(t *testing.T) {
	electionRE := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	candidateRE := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	var names []string
	for _, c := range "aZ09_-.:/ \x00é" {
		for _, n := range []int{1, 2, 63, 64, 128, 129} {
			names = append(names, strings.Repeat(string(c), n), "a"+strings.Repeat(string(c), n-1), strings.Repeat("a", n-1)+string(c))
		}
	}
	names = append(names, "", "billing", "Billing", "node-1.example.com:8080", "a\n", "\na")
	for _, name := range names {
		if got, want := ValidateElectionName(name) == nil, electionRE.MatchString(name); got != want {
			t.Errorf("election name %q: valid %v, the rule says %v", name, got, want)
		}
		if got, want := ValidateCandidateID(name) == nil, candidateRE.MatchString(name); got != want {
			t.Errorf("candidate id %q: valid %v, the rule says %v", name, got, want)
		}
	}
}
