package gateway

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KV is a small durable key-value store with compare-and-set, kept in the
// same coordination engine as the elections, and a role of every Backend:
// package webhooks keeps its endpoints, secrets, delivery claims and
// delivery log in it, so that every gateway replica sees them and a
// replica that dies loses nothing.
//
// Keys are one or more segments separated by "/"; a segment is 1 to 64
// characters of letters, digits, '_' and '-' (ValidateKey), a key at most
// MaxKeyBytes. The charset fits NATS KV (with "/" written as ".") and etcd.
// Values are at most MaxValueBytes. Revisions are positive and change on
// every write of a key; they are comparable only for the same key.
//
// All methods are safe for concurrent use by many replicas.
type KV interface {
	// Get returns the item at key. Errors: ErrKeyNotFound.
	Get(ctx context.Context, key string) (Item, error)

	// Create writes key only if it does not exist and returns the new
	// revision. Errors: ErrRevisionMismatch when key exists.
	Create(ctx context.Context, key string, value []byte) (uint64, error)

	// Update writes key only if its current revision is rev and returns the
	// new revision. Errors: ErrRevisionMismatch when key was written since,
	// or no longer exists.
	Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)

	// Delete removes key if its current revision is rev, or whatever its
	// revision with rev 0. Deleting a key that does not exist with rev 0 is
	// not an error. Errors: ErrRevisionMismatch.
	Delete(ctx context.Context, key string, rev uint64) error

	// List returns every item whose key is under prefix (prefix + "/" + …)
	// or, with prefix "", every item; in no particular order. prefix is a
	// valid key or "".
	List(ctx context.Context, prefix string) ([]Item, error)
}

// Item is one key of a KV, its value and its revision.
type Item struct {
	Key      string
	Value    []byte
	Revision uint64
}

// Bounds of KV keys and values.
const (
	MaxKeyBytes   = 512
	MaxValueBytes = 256 << 10
)

// Errors of a KV. Backends wrap them with context
// (fmt.Errorf("memory: kv update %q: %w", key, gateway.ErrRevisionMismatch)).
var (
	ErrKeyNotFound      = errors.New("gateway: key not found")
	ErrRevisionMismatch = errors.New("gateway: key revision does not match")
)

var keySegmentRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateKey checks a KV key: segments of 1 to 64 letters, digits, '_' or
// '-', separated by "/", at most MaxKeyBytes in all. It returns an error
// matching ErrInvalid.
func ValidateKey(key string) error {
	if len(key) == 0 || len(key) > MaxKeyBytes {
		return fmt.Errorf("gateway: kv key of %d bytes: %w", len(key), ErrInvalid)
	}
	for _, s := range strings.Split(key, "/") {
		if !keySegmentRE.MatchString(s) {
			return fmt.Errorf("gateway: kv key %q: segment %q: %w", clip(key), clip(s), ErrInvalid)
		}
	}
	return nil
}

// KV returns the backend's KV, for package webhooks.
func (g *Gateway) KV() KV { return g.b }
