package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/electorhq/elector/gateway"
)

// getJSON reads the JSON record at key and its revision. Errors:
// gateway.ErrKeyNotFound, and the KV's.
func getJSON[T any](ctx context.Context, kv gateway.KV, key string) (T, uint64, error) {
	var v T
	it, err := kv.Get(ctx, key)
	if err != nil {
		return v, 0, err
	}
	if err := json.Unmarshal(it.Value, &v); err != nil {
		return v, 0, fmt.Errorf("webhooks: record %s: %w", key, err)
	}
	return v, it.Revision, nil
}

// createJSON writes a new record. Errors: gateway.ErrRevisionMismatch when
// key exists.
func createJSON(ctx context.Context, kv gateway.KV, key string, v any) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return kv.Create(ctx, key, b)
}

// updateJSON writes a record over revision rev. Errors:
// gateway.ErrRevisionMismatch.
func updateJSON(ctx context.Context, kv gateway.KV, key string, v any, rev uint64) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return kv.Update(ctx, key, b, rev)
}

// errUnchanged, returned by a modify function, leaves the record as it is.
var errUnchanged = errors.New("webhooks: unchanged")

// modify applies f to the record at key by read, change and
// compare-and-set, again while another writer wins; it returns the record
// as written (or as read, if f returned errUnchanged). Errors:
// gateway.ErrKeyNotFound, f's errors, the KV's.
func modify[T any](ctx context.Context, kv gateway.KV, key string, f func(*T) error) (T, error) {
	for {
		v, rev, err := getJSON[T](ctx, kv, key)
		if err != nil {
			return v, err
		}
		if err := f(&v); err != nil {
			if errors.Is(err, errUnchanged) {
				return v, nil
			}
			return v, err
		}
		if _, err := updateJSON(ctx, kv, key, v, rev); err == nil {
			return v, nil
		} else if !errors.Is(err, gateway.ErrRevisionMismatch) {
			return v, err
		}
		if err := ctx.Err(); err != nil {
			return v, err
		}
	}
}

// listJSON reads every record under prefix; unreadable ones are skipped.
func listJSON[T any](ctx context.Context, kv gateway.KV, prefix string) ([]T, error) {
	items, err := kv.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		var v T
		if json.Unmarshal(it.Value, &v) == nil {
			out = append(out, v)
		}
	}
	return out, nil
}
