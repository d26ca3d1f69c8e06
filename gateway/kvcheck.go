package gateway

import "fmt"

// CheckItem checks what a KV call is given: a valid key (ValidateKey) and
// a value of at most MaxValueBytes (nil for calls without one). Every KV
// checks its arguments with it before it asks its store anything; errors
// match ErrInvalid.
func CheckItem(key string, value []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueBytes {
		return fmt.Errorf("gateway: kv %q: value of %d bytes, more than %d: %w", clip(key), len(value), MaxValueBytes, ErrInvalid)
	}
	return nil
}
