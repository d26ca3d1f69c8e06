package nats

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/electorhq/elector/gateway"
)

var _ gateway.KV = (*Backend)(nil)

// kvStreamConfig is what jetstream.KeyValueConfig{History: 1} would make,
// with two differences. AllowDirect is off, so reads go to the stream
// leader: a direct get may be answered by a lagging follower, and a replica
// would not read its own writes. AllowMsgTTL is on, so that the markers
// Delete leaves expire after MarkerTTL instead of piling up for every key
// ever deleted.
func (b *Backend) kvStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              b.subj.kvStream(),
		Description:       "elector: key-value store (webhook endpoints, secrets, deliveries)",
		Subjects:          []string{"$KV." + b.subj.kvBucket() + ".>"},
		Storage:           jetstream.FileStorage,
		Replicas:          b.cfg.Replicas,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardNew,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxConsumers:      -1,
		// Room for the headers of a conditional write beside the value.
		MaxMsgSize:  gateway.MaxValueBytes + 4<<10,
		AllowRollup: true,
		DenyDelete:  true,
		AllowMsgTTL: true,
	}
}

// openKV creates or updates the KV stream and binds to it as a bucket.
func (b *Backend) openKV(ctx context.Context) error {
	stream, err := b.js.CreateOrUpdateStream(ctx, b.kvStreamConfig())
	if err != nil {
		return translate(err)
	}
	kv, err := b.js.KeyValue(ctx, b.subj.kvBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// The stream was created a moment ago: in a cluster, its info can
		// lag behind its creation. Transient, so the caller may try again.
		return fmt.Errorf("%w: %w", gateway.ErrUnavailable, err)
	}
	if err != nil {
		return translate(err)
	}
	b.kv, b.kvStream = kv, stream
	return nil
}

// kvKey maps a gateway key onto a NATS KV key: "/" becomes ".". The
// gateway's key charset has no '.', so the mapping is one to one.
func kvKey(key string) string { return strings.ReplaceAll(key, "/", ".") }

// gatewayKey is the inverse of kvKey.
func gatewayKey(key string) string { return strings.ReplaceAll(key, ".", "/") }

// kvCheck validates a key and a value's size and that NATS is connected.
func (b *Backend) kvCheck(op, key string, value []byte) error {
	if err := gateway.CheckItem(key, value); err != nil {
		return fmt.Errorf("nats: kv %s: %w", op, err)
	}
	if err := b.connected(); err != nil {
		return fmt.Errorf("nats: kv %s %q: %w", op, key, err)
	}
	return nil
}

// Get implements gateway.KV, reading from the stream leader. A deleted key
// is gateway.ErrKeyNotFound. Errors: gateway.ErrKeyNotFound,
// gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Get(ctx context.Context, key string) (gateway.Item, error) {
	if err := b.kvCheck("get", key, nil); err != nil {
		return gateway.Item{}, err
	}
	var e jetstream.KeyValueEntry
	err := b.resent(ctx, func(ctx context.Context) (err error) {
		e, err = b.kv.Get(ctx, kvKey(key))
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return gateway.Item{}, fmt.Errorf("nats: kv get %q: %w", key, gateway.ErrKeyNotFound)
	}
	if err != nil {
		return gateway.Item{}, fmt.Errorf("nats: kv get %q: %w", key, translate(err))
	}
	return gateway.Item{Key: key, Value: e.Value(), Revision: e.Revision()}, nil
}

// Create implements gateway.KV. Errors: gateway.ErrRevisionMismatch when
// key exists, gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := b.kvCheck("create", key, value); err != nil {
		return 0, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	// jetstream's Create writes over a delete marker at the marker's
	// revision. If the marker expires between its two requests, the second
	// fails although the key does not exist: look, and try again.
	for attempt := 0; ; attempt++ {
		rev, err := b.kv.Create(ctx, kvKey(key), value)
		if err == nil {
			return rev, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !isConflict(err) {
			return 0, fmt.Errorf("nats: kv create %q: %w", key, translate(err))
		}
		if attempt < 2 {
			if _, gerr := b.kv.Get(ctx, kvKey(key)); errors.Is(gerr, jetstream.ErrKeyNotFound) {
				continue
			}
		}
		return 0, fmt.Errorf("nats: kv create %q: %w", key, gateway.ErrRevisionMismatch)
	}
}

// Update implements gateway.KV: the write is published with
// Nats-Expected-Last-Subject-Sequence rev, so the stream leader refuses it
// if the key was written or deleted since. It is published as
// jetstream's KeyValue.Update publishes it, but through publish, which
// sends it again when unanswered: the expected revision keeps a second
// copy from being stored, and a refusal after an unanswered copy is
// reported as unavailable (the write may have been stored), never as a
// mismatch. Errors: gateway.ErrRevisionMismatch, gateway.ErrInvalid,
// gateway.ErrUnavailable.
func (b *Backend) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := b.kvCheck("update", key, value); err != nil {
		return 0, err
	}
	if rev == 0 { // no key has revision 0; NATS would read it as "create"
		return 0, fmt.Errorf("nats: kv update %q at revision 0: %w", key, gateway.ErrRevisionMismatch)
	}
	if err := b.connected(); err != nil {
		return 0, fmt.Errorf("nats: kv update %q: %w", key, err)
	}
	m := nats.NewMsg(b.kvSubject(kvKey(key)))
	m.Data = value
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	next, err := b.publish(ctx, m, b.subj.kvStream())
	if isConflict(err) {
		return 0, fmt.Errorf("nats: kv update %q: %w", key, gateway.ErrRevisionMismatch)
	}
	if err != nil {
		return 0, fmt.Errorf("nats: kv update %q: %w", key, translate(err))
	}
	return next, nil
}

// Delete implements gateway.KV with a purge: the key's value is removed and
// a marker, which expires after Config.MarkerTTL, takes its place. With rev
// not 0 the purge is conditional on the key's revision. Errors:
// gateway.ErrRevisionMismatch, gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Delete(ctx context.Context, key string, rev uint64) error {
	if err := b.kvCheck("delete", key, nil); err != nil {
		return err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	opts := []jetstream.KVDeleteOpt{jetstream.PurgeTTL(b.cfg.MarkerTTL)}
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	err := b.kv.Purge(ctx, kvKey(key), opts...)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isConflict(err) {
		return fmt.Errorf("nats: kv delete %q: %w", key, gateway.ErrRevisionMismatch)
	}
	if err != nil {
		return fmt.Errorf("nats: kv delete %q: %w", key, translate(err))
	}
	return nil
}

// List implements gateway.KV: every item under prefix as the stream
// leader holds it once List has asked it, so that a List reads every write
// acknowledged before it began, through any replica.
//
// It reads in two steps. First a watch of the keys under prefix delivers
// the last message of each, deletions included. The watch's consumer may
// live on a follower of the stream that lags the leader, so the watch can
// miss recent writes and still show keys deleted since. Then List asks
// the leader, which stores a message before acknowledging it, for every
// message under prefix after the last one the watch delivered, one at a
// time, and applies them in order. Nothing before that point was missed:
// the stream keeps one message per key, so a message still held and not
// delivered by the watch is one the watch's copy did not have yet, which
// is later than all it delivered. When the watch's copy was current, that
// costs one request, answered "no message".
//
// Errors: gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) List(ctx context.Context, prefix string) ([]gateway.Item, error) {
	filter := jetstream.AllKeys
	if prefix != "" {
		if err := b.kvCheck("list", prefix, nil); err != nil {
			return nil, err
		}
		filter = kvKey(prefix) + ".>"
	} else if err := b.connected(); err != nil {
		return nil, fmt.Errorf("nats: kv list: %w", err)
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	items, last, err := b.watchList(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("nats: kv list %q: %w", prefix, err)
	}
	subjects := b.kvSubject(filter)
	for seq := last + 1; ; {
		var m *jetstream.RawStreamMsg
		err := b.resent(ctx, func(ctx context.Context) (err error) {
			m, err = b.kvStream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subjects))
			return err
		})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("nats: kv list %q: from the stream leader: %w", prefix, translate(err))
		}
		key := gatewayKey(strings.TrimPrefix(m.Subject, b.kvSubject("")))
		if kvDeleted(m.Header.Get(kvOperationHeader)) {
			delete(items, key)
		} else {
			items[key] = gateway.Item{Key: key, Value: m.Data, Revision: m.Sequence}
		}
		seq = m.Sequence + 1
	}
	out := make([]gateway.Item, 0, len(items))
	for _, it := range items {
		out = append(out, it)
	}
	return out, nil
}

// watchList is List's first step: the items a watch of filter (a KV key
// pattern) delivers before it says every initial value was delivered, and
// the last revision it delivered, deletions' included.
func (b *Backend) watchList(ctx context.Context, filter string) (map[string]gateway.Item, uint64, error) {
	w, err := b.kv.WatchFiltered(ctx, []string{filter})
	if err != nil {
		return nil, 0, translate(err)
	}
	defer func() { _ = w.Stop() }()
	items := map[string]gateway.Item{}
	var last uint64
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, fmt.Errorf("%w: watcher closed", gateway.ErrUnavailable)
			}
			if e == nil { // every initial value delivered
				return items, last, nil
			}
			last = max(last, e.Revision())
			key := gatewayKey(e.Key())
			if e.Operation() == jetstream.KeyValuePut {
				items[key] = gateway.Item{Key: key, Value: e.Value(), Revision: e.Revision()}
			} else {
				delete(items, key)
			}
		case <-ctx.Done():
			return nil, 0, translate(ctx.Err())
		}
	}
}

// kvOperationHeader is the header of a KV stream's message that marks a
// deletion (kvDeleted); a value has none.
const kvOperationHeader = "KV-Operation"

// kvDeleted reports whether a KV message's operation header marks it as a
// deletion or a purge.
func kvDeleted(op string) bool { return op == "DEL" || op == "PURGE" }

// kvSubject is the stream subject of key, a KV key or key pattern;
// kvSubject("") is the prefix of every subject of the bucket.
func (b *Backend) kvSubject(key string) string { return "$KV." + b.subj.kvBucket() + "." + key }
