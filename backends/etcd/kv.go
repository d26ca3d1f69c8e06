package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

var (
	_ gateway.KV          = (*Backend)(nil)
	_ gateway.CursorBound = (*Backend)(nil)
)

// kvPage is how many keys one read of List returns.
const kvPage = 500

// kvCheck validates a key and a value's size.
func kvCheck(op, key string, value []byte) error {
	if err := gateway.CheckItem(key, value); err != nil {
		return fmt.Errorf("etcd: kv %s: %w", op, err)
	}
	return nil
}

// Get implements gateway.KV with a linearizable read, so a replica reads
// every write acknowledged before. Errors: gateway.ErrKeyNotFound,
// gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Get(ctx context.Context, key string) (gateway.Item, error) {
	if err := kvCheck("get", key, nil); err != nil {
		return gateway.Item{}, err
	}
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	resp, err := b.cli.Get(rctx, b.keys.kv(key))
	if err != nil {
		return gateway.Item{}, translate(ctx, fmt.Sprintf("kv get %q", key), err)
	}
	if len(resp.Kvs) == 0 {
		return gateway.Item{}, fmt.Errorf("etcd: kv get %q: %w", key, gateway.ErrKeyNotFound)
	}
	kv := resp.Kvs[0]
	return gateway.Item{Key: key, Value: kv.Value, Revision: uint64(kv.ModRevision)}, nil
}

// Create implements gateway.KV: a put guarded by the key's create revision
// being 0 (no such key). Errors: gateway.ErrRevisionMismatch when key
// exists, gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := kvCheck("create", key, value); err != nil {
		return 0, err
	}
	k := b.keys.kv(key)
	return b.kvPut(ctx, "create", key, value, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
}

// Update implements gateway.KV: a put guarded by the key's mod revision
// being rev. A missing key has mod revision 0, which no item has, so it is
// a mismatch too. Errors: gateway.ErrRevisionMismatch, gateway.ErrInvalid,
// gateway.ErrUnavailable.
func (b *Backend) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := kvCheck("update", key, value); err != nil {
		return 0, err
	}
	if rev == 0 || rev > math.MaxInt64 { // revision 0 would compare equal to a missing key
		return 0, fmt.Errorf("etcd: kv update %q at revision %d: %w", key, rev, gateway.ErrRevisionMismatch)
	}
	k := b.keys.kv(key)
	return b.kvPut(ctx, "update", key, value, clientv3.Compare(clientv3.ModRevision(k), "=", int64(rev)))
}

// kvPut puts key if cmp holds and returns the revision of the write.
func (b *Backend) kvPut(ctx context.Context, op, key string, value []byte, cmp clientv3.Cmp) (uint64, error) {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	resp, err := b.cli.Txn(rctx).If(cmp).Then(clientv3.OpPut(b.keys.kv(key), string(value))).Commit()
	if err != nil {
		return 0, translate(ctx, fmt.Sprintf("kv %s %q", op, key), err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcd: kv %s %q: %w", op, key, gateway.ErrRevisionMismatch)
	}
	// The put is the transaction's only write: its revision is the header's.
	return uint64(resp.Header.Revision), nil
}

// Delete implements gateway.KV: with rev 0 a plain delete, otherwise a
// delete guarded by the key's mod revision being rev (a missing key's is
// 0). Errors: gateway.ErrRevisionMismatch, gateway.ErrInvalid,
// gateway.ErrUnavailable.
func (b *Backend) Delete(ctx context.Context, key string, rev uint64) error {
	if err := kvCheck("delete", key, nil); err != nil {
		return err
	}
	if rev > math.MaxInt64 {
		return fmt.Errorf("etcd: kv delete %q at revision %d: %w", key, rev, gateway.ErrRevisionMismatch)
	}
	k := b.keys.kv(key)
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	if rev == 0 {
		if _, err := b.cli.Delete(rctx, k); err != nil {
			return translate(ctx, fmt.Sprintf("kv delete %q", key), err)
		}
		return nil
	}
	resp, err := b.cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(k), "=", int64(rev))).Then(clientv3.OpDelete(k)).Commit()
	if err != nil {
		return translate(ctx, fmt.Sprintf("kv delete %q", key), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd: kv delete %q: %w", key, gateway.ErrRevisionMismatch)
	}
	return nil
}

// List implements gateway.KV. It reads in pages of kvPage keys, all at the
// revision of the first page, so the items are one consistent snapshot; if
// etcd compacts that revision meanwhile, it starts again. Errors:
// gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) List(ctx context.Context, prefix string) ([]gateway.Item, error) {
	start := b.keys.kvDir()
	if prefix != "" {
		if err := kvCheck("list", prefix, nil); err != nil {
			return nil, err
		}
		start = b.keys.kv(prefix) + "/"
	}
	op := fmt.Sprintf("kv list %q", prefix)
	for attempt := 0; ; attempt++ {
		out, err := b.kvList(ctx, start)
		switch {
		case errors.Is(err, rpctypes.ErrCompacted) && attempt < 2:
			continue
		case errors.Is(err, rpctypes.ErrCompacted): // not a cursor of the caller's
			return nil, fmt.Errorf("etcd: %s: %w: %w", op, gateway.ErrUnavailable, err)
		case err != nil:
			return nil, translate(ctx, op, err)
		}
		return out, nil
	}
}

// kvList reads the keys under start (a directory of the KV) page by page
// at one revision. Its errors are etcd's.
func (b *Backend) kvList(ctx context.Context, start string) ([]gateway.Item, error) {
	var (
		out []gateway.Item
		rev int64
	)
	end := clientv3.GetPrefixRangeEnd(start)
	for from := start; ; {
		rctx, cancel := b.reqCtx(ctx)
		resp, err := b.cli.Get(rctx, from, clientv3.WithRange(end), clientv3.WithRev(rev), clientv3.WithLimit(kvPage))
		cancel()
		if err != nil {
			return nil, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			key := strings.TrimPrefix(string(kv.Key), b.keys.kvDir())
			out = append(out, gateway.Item{Key: key, Value: kv.Value, Revision: uint64(kv.ModRevision)})
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
