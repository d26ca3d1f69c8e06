package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// validName reports whether s is 1 to max bytes, the first a lower-case
// letter or digit (or, with upper, any letter or digit), the others that
// or one of extra. It is what the regular expressions
// ^[a-z0-9][a-z0-9_-]{0,62}$ (election names) and
// ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$ (candidate ids) match, without a
// regular expression on every request's path.
func validName(s string, max int, upper bool, extra string) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case upper && c >= 'A' && c <= 'Z':
		case i > 0 && strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ValidationError says which input is wrong and why. It matches ErrInvalid
// with errors.Is.
type ValidationError struct {
	Field  string // the name of the input as the API spells it: "election", "ttl", …
	Reason string // a sentence a person can act on
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("gateway: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ValidateElectionName checks an election name: 1 to 63 characters of
// lower-case letters, digits, '_' and '-', starting with a letter or digit.
func ValidateElectionName(name string) error {
	if !validName(name, 63, false, "_-") {
		return invalid("election", "%q is not a valid election name: use 1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit", clip(name))
	}
	return nil
}

// ValidateCandidateID checks a candidate id: 1 to 128 characters of letters,
// digits, '.', '_', '-' and ':', starting with a letter or digit (a host
// name fits).
func ValidateCandidateID(id string) error {
	if !validName(id, 128, true, "._:-") {
		return invalid("id", "%q is not a valid candidate id: use 1 to 128 letters, digits, '.', '_', '-' or ':', starting with a letter or digit", clip(id))
	}
	return nil
}

// compactObject checks that raw is a JSON object (or null / empty, which mean
// no metadata) of at most max bytes once compacted, and returns it compacted.
func compactObject(field string, raw json.RawMessage, max int) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	if trimmed[0] != '{' {
		return nil, invalid(field, "must be a JSON object, like {\"addr\": \"10.0.0.7:8080\"}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return nil, invalid(field, "is not valid JSON: %v", err)
	}
	if buf.Len() > max {
		return nil, invalid(field, "is %d bytes; at most %d bytes are allowed", buf.Len(), max)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// validateText checks free text such as an error reason.
func validateText(field, s string, max int) error {
	if len(s) > max {
		return invalid(field, "is %d bytes; at most %d bytes are allowed", len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	return nil
}

func validateDuration(field string, d, min, max time.Duration) error {
	if d < min || d > max {
		return invalid(field, "must be between %s and %s, got %s", min, max, d)
	}
	return nil
}

// clip shortens a value quoted back in an error message.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
