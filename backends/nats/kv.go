package nats

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// Create implements gateway.KV: a write of key expecting no message on
// its subject, or, over a delete marker, the marker's sequence, as
// jetstream's KeyValue.Create writes it. Errors:
// gateway.ErrRevisionMismatch when key exists, gateway.ErrInvalid,
// gateway.ErrUnavailable.
func (b *Backend) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	if err := b.kvCheck("create", key, value); err != nil {
		return 0, err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	subject := b.kvSubject(kvKey(key))
	var over uint64 // the delete marker written over, or 0 for none
	for attempt := 0; ; attempt++ {
		rev, err := b.kvWrite(ctx, subject, value, nil, over)
		if err == nil {
			return rev, nil
		}
		if !isConflict(err) {
			return 0, fmt.Errorf("nats: kv create %q: %w", key, translate(err))
		}
		// The subject holds a message other than the one expected: a value
		// (the key exists), or a delete marker, which may also have
		// expired or been written meanwhile: look, and try again.
		seq, live, lerr := b.kvLast(ctx, subject)
		switch {
		case lerr != nil:
			return 0, fmt.Errorf("nats: kv create %q: %w", key, lerr)
		case live || attempt >= 2:
			return 0, fmt.Errorf("nats: kv create %q: %w", key, gateway.ErrRevisionMismatch)
		}
		over = seq
	}
}

// Update implements gateway.KV: the write is published with
// Nats-Expected-Last-Subject-Sequence rev, so the stream leader refuses it
// if the key was written or deleted since. Errors:
// gateway.ErrRevisionMismatch, gateway.ErrInvalid, gateway.ErrUnavailable.
func (b *Backend) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := b.kvCheck("update", key, value); err != nil {
		return 0, err
	}
	if rev == 0 { // no key has revision 0; NATS would read it as "create"
		return 0, fmt.Errorf("nats: kv update %q at revision 0: %w", key, gateway.ErrRevisionMismatch)
	}
	next, err := b.kvWrite(ctx, b.kvSubject(kvKey(key)), value, nil, rev)
	if isConflict(err) {
		return 0, fmt.Errorf("nats: kv update %q: %w", key, gateway.ErrRevisionMismatch)
	}
	if err != nil {
		return 0, fmt.Errorf("nats: kv update %q: %w", key, translate(err))
	}
	return next, nil
}

// Delete implements gateway.KV with a purge: the key's value is removed and
// a marker, which expires after Config.MarkerTTL, takes its place (the
// message jetstream's KeyValue.Purge writes with PurgeTTL). With rev not 0
// the purge is conditional on the key's revision. With rev 0 it is
// conditional on the revision read just before (again if the key is
// written meanwhile), so that a copy sent again (kvWrite) cannot purge a
// value written after the first; a key already gone is left as it is.
// Errors: gateway.ErrRevisionMismatch, gateway.ErrInvalid,
// gateway.ErrUnavailable.
func (b *Backend) Delete(ctx context.Context, key string, rev uint64) error {
	if err := b.kvCheck("delete", key, nil); err != nil {
		return err
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	subject := b.kvSubject(kvKey(key))
	hdr := nats.Header{kvOperationHeader: {"PURGE"}, jetstream.MsgRollup: {jetstream.MsgRollupSubject}}
	if b.cfg.MarkerTTL > 0 {
		hdr.Set(jetstream.MsgTTLHeader, b.cfg.MarkerTTL.String())
	}
	for attempt := 0; ; attempt++ {
		expect := rev
		if rev == 0 {
			seq, live, err := b.kvLast(ctx, subject)
			switch {
			case err != nil:
				return fmt.Errorf("nats: kv delete %q: %w", key, err)
			case !live:
				return nil
			}
			expect = seq
		}
		_, err := b.kvWrite(ctx, subject, nil, hdr, expect)
		switch {
		case err == nil:
			return nil
		case isConflict(err) && rev != 0:
			return fmt.Errorf("nats: kv delete %q: %w", key, gateway.ErrRevisionMismatch)
		case isConflict(err) && attempt < 2:
			continue // written meanwhile: purge what is there now
		case isConflict(err):
			return fmt.Errorf("nats: kv delete %q: written again as often as it was read: %w", key, gateway.ErrUnavailable)
		case rev == 0 && errors.Is(err, nats.ErrTimeout):
			// Perhaps stored: the key is deleted if it is gone now.
			if _, live, lerr := b.kvLast(ctx, subject); lerr == nil && !live {
				return nil
			}
		}
		return fmt.Errorf("nats: kv delete %q: %w", key, translate(err))
	}
}

// kvWrite publishes data with hdr on subject of the KV's stream, expecting
// the subject's last sequence to be expect (0: no message), and returns
// the message's sequence, the key's new revision. It goes through
// publish, which sends it again when unanswered: the expected sequence
// keeps a second copy from being stored, and a refusal after an
// unanswered copy is reported as unanswered (nats.ErrTimeout: the write
// may have been stored), never as a conflict (resend.go).
func (b *Backend) kvWrite(ctx context.Context, subject string, data []byte, hdr nats.Header, expect uint64) (uint64, error) {
	if err := b.connected(); err != nil {
		return 0, err
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: maps.Clone(hdr)}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expect, 10))
	return b.publish(ctx, m, b.subj.kvStream())
}

// kvLast reads, from the stream's leader, the last message of a subject
// of the KV's stream: its sequence (0: none), and whether it is a value
// (live) rather than a deletion's marker or nothing.
func (b *Backend) kvLast(ctx context.Context, subject string) (seq uint64, live bool, err error) {
	var m *jetstream.RawStreamMsg
	err = b.resent(ctx, func(ctx context.Context) (err error) {
		m, err = b.kvStream.GetLastMsgForSubject(ctx, subject)
		return err
	})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, translate(err)
	}
	return m.Sequence, !kvDeleted(m.Header.Get(kvOperationHeader)), nil
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
