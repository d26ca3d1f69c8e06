package fielderr

import (
	"fmt"
	"regexp"
)

// Error is one field of a configuration that cannot work.
type Error struct {
	// Field is the Go name of the field at fault, dotted through nested
	// structs and pointers: "MinTTL", "Defaults.ErrorCooldown".
	Field string
	// Detail says what is wrong. Other fields it mentions are written
	// {Name} (their Go names, dotted as Field is).
	Detail string
	// Err is the sentinel the error wraps, if any.
	Err error
}

// Errorf returns the Error of field, its detail formatted as fmt.Sprintf
// does; write a field the detail mentions as {Name}.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Wrap sets the sentinel e wraps and returns e.
func (e *Error) Wrap(sentinel error) *Error {
	e.Err = sentinel
	return e
}

// mention matches a field mentioned in a detail: {RequestTimeout}.
var mention = regexp.MustCompile(`\{([A-Za-z][A-Za-z0-9_.]*)\}`)

// Name returns the message of e with every field, the one at fault and
// those its detail mentions, named by name; a field name maps to "" keeps
// its Go name.
func (e *Error) Name(name func(field string) string) string {
	named := func(field string) string {
		if n := name(field); n != "" {
			return n
		}
		return field
	}
	detail := mention.ReplaceAllStringFunc(e.Detail, func(m string) string {
		return named(m[1 : len(m)-1])
	})
	return named(e.Field) + ": " + detail
}

// Error is the message with the fields' Go names.
func (e *Error) Error() string {
	return e.Name(func(string) string { return "" })
}

// Unwrap returns the sentinel e wraps.
func (e *Error) Unwrap() error { return e.Err }

// In returns e as an error of the configuration that holds e's at path
// (a dotted Go path, "Gateway"): its field and every field its detail
// mentions are prefixed with path. e itself is unchanged.
func (e *Error) In(path string) *Error {
	detail := mention.ReplaceAllStringFunc(e.Detail, func(m string) string {
		return "{" + path + "." + m[1:len(m)-1] + "}"
	})
	return &Error{Field: path + "." + e.Field, Detail: detail, Err: e.Err}
}
