package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.KV = (*Backend)(nil)

// kvItem is one key of the Backend's KV.
type kvItem struct {
	value []byte
	rev   uint64
}

// kvCheck validates a key and a value's size.
func kvCheck(op, key string, value []byte) error {
	if err := gateway.CheckItem(key, value); err != nil {
		return fmt.Errorf("memory: kv %s: %w", op, err)
	}
	return nil
}

// Get implements gateway.KV.
func (b *Backend) Get(_ context.Context, key string) (gateway.Item, error) {
	if err := kvCheck("get", key, nil); err != nil {
		return gateway.Item{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.kv[key]
	if !ok {
		return gateway.Item{}, fmt.Errorf("memory: kv get %q: %w", key, gateway.ErrKeyNotFound)
	}
	return gateway.Item{Key: key, Value: clone(it.value), Revision: it.rev}, nil
}

// Create implements gateway.KV.
func (b *Backend) Create(_ context.Context, key string, value []byte) (uint64, error) {
	if err := kvCheck("create", key, value); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.kv[key]; ok {
		return 0, fmt.Errorf("memory: kv create %q: %w", key, gateway.ErrRevisionMismatch)
	}
	return b.kvPut(key, value), nil
}

// Update implements gateway.KV.
func (b *Backend) Update(_ context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := kvCheck("update", key, value); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if it, ok := b.kv[key]; !ok || it.rev != rev {
		return 0, fmt.Errorf("memory: kv update %q: %w", key, gateway.ErrRevisionMismatch)
	}
	return b.kvPut(key, value), nil
}

// Delete implements gateway.KV.
func (b *Backend) Delete(_ context.Context, key string, rev uint64) error {
	if err := kvCheck("delete", key, nil); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	it, ok := b.kv[key]
	if rev != 0 && (!ok || it.rev != rev) {
		return fmt.Errorf("memory: kv delete %q: %w", key, gateway.ErrRevisionMismatch)
	}
	delete(b.kv, key)
	return nil
}

// List implements gateway.KV.
func (b *Backend) List(_ context.Context, prefix string) ([]gateway.Item, error) {
	if prefix != "" {
		if err := kvCheck("list", prefix, nil); err != nil {
			return nil, err
		}
		prefix += "/"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []gateway.Item
	for k, it := range b.kv {
		if strings.HasPrefix(k, prefix) {
			out = append(out, gateway.Item{Key: k, Value: clone(it.value), Revision: it.rev})
		}
	}
	return out, nil
}

// kvPut writes key with a fresh revision. Callers hold b.mu.
func (b *Backend) kvPut(key string, value []byte) uint64 {
	b.kvRev++
	b.kv[key] = kvItem{value: clone(value), rev: b.kvRev}
	return b.kvRev
}

func clone(v []byte) []byte { return append([]byte(nil), v...) }
