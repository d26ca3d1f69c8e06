package nats

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/nats-io/nats-server/v2/server"
)

// flushedStore is the file store of the records stream of an embedded
// server, set to write each message to its file at once and to sync its
// files to disk when flushed (FlushAllPending) rather than after every
// write: the mode JetStream gives the store of a replicated stream, whose
// raft log stands in for the per-write sync. Here the group commit
// (commit.go) stands in for it: nothing of a record is acknowledged or
// shown before a flush that began after the record was stored has
// returned. Rewrites of a block (compaction) are synced as before.
type flushedStore struct {
	server.StreamStore
	closed *atomic.Bool // the store's own "closed": a flush of a closed store syncs nothing

	mu              *sync.RWMutex // the store's lock
	always, onFlush *atomic.Bool  // its effective sync settings
}

// syncOnFlush sets the store to sync on flush again if the server has set
// it back to syncing every write (groupCommit.flush). Sync on flush
// first, as flushedStoreOf: every write meanwhile is synced one way or
// the other.
func (s *flushedStore) syncOnFlush() {
	if s.onFlush.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onFlush.Store(true)
	s.always.Store(false)
}

// restore sets the store back to syncing every write, as it was.
func (s *flushedStore) restore() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always.Store(true)
	s.onFlush.Store(false)
}

// errNoStoreAccess says that the embedded server's records store could not
// be reached or is not what flushedStoreOf expects: every record is then
// synced on its own, as before.
var errNoStoreAccess = errors.New("nats: no access to the records store")

// flushedStoreOf finds the file store of stream on the embedded server srv
// and sets it to sync on flush (flushedStore). It reaches into the
// server's unexported state (the account's streams, the stream's store,
// the file store's sync settings), which no API offers, so it checks the
// name and type of every field it touches and changes nothing unless all
// of them are as in the nats-server version it was written against
// (v2.15): any difference is errNoStoreAccess, and the store keeps
// syncing every write. TestFlushedStoreOfThisServerVersion fails when a
// new server version moves them.
//
// The switch is the one the server itself makes for a replicated stream
// (fileStore.updateDurabilitySettingsLocked(true)): sync on flush first,
// then no sync per write, under the store's lock, so that no write is
// processed with neither. It needs the server's SyncAlways set (the
// store's configured mode, which every later reset of the settings
// returns to) and writes flushed to the file in place, not buffered in
// the server.
func flushedStoreOf(srv *server.Server, stream string) (*flushedStore, error) {
	st, err := streamStoreOf(srv, stream)
	if err != nil {
		return nil, err
	}
	ptr := reflect.ValueOf(st)
	if ptr.Kind() != reflect.Pointer || ptr.Elem().Type().Name() != "fileStore" {
		return nil, fmt.Errorf("%w: stream %s is stored in a %T, not a file store", errNoStoreAccess, stream, st)
	}
	fs := ptr.Elem()
	mu, err := fieldAs[sync.RWMutex](fs, "mu")
	if err != nil {
		return nil, err
	}
	always, err := fieldAs[atomic.Bool](fs, "syncAlways")
	if err != nil {
		return nil, err
	}
	onFlush, err := fieldAs[atomic.Bool](fs, "syncOnFlush")
	if err != nil {
		return nil, err
	}
	closed, err := fieldAs[atomic.Bool](fs, "closed")
	if err != nil {
		return nil, err
	}
	inPlace, err := fieldAs[bool](fs, "fip")
	if err != nil {
		return nil, err
	}
	fcfg, err := fieldAs[server.FileStoreConfig](fs, "fcfg")
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case !fcfg.SyncAlways:
		return nil, fmt.Errorf("%w: stream %s is not configured to sync every write", errNoStoreAccess, stream)
	case !*inPlace || fcfg.AsyncFlush:
		return nil, fmt.Errorf("%w: stream %s buffers its writes", errNoStoreAccess, stream)
	case !always.Load() || onFlush.Load():
		return nil, fmt.Errorf("%w: stream %s does not sync every write now", errNoStoreAccess, stream)
	}
	onFlush.Store(true)
	always.Store(false)
	return &flushedStore{StreamStore: st, closed: closed, mu: mu, always: always, onFlush: onFlush}, nil
}

// streamStoreOf returns the store of stream in srv's global account, as
// the server's own Account.lookupStream reaches it: the account's
// JetStream state (under the account's lock), its stream (under that
// state's lock), the stream's store (under the stream's lock).
func streamStoreOf(srv *server.Server, stream string) (server.StreamStore, error) {
	acc := reflect.ValueOf(srv.GlobalAccount()).Elem()
	accMu, err := fieldAs[sync.RWMutex](acc, "mu")
	if err != nil {
		return nil, err
	}
	accMu.RLock()
	jsa, err := field(acc, "js", reflect.Pointer)
	if err == nil && jsa.IsNil() {
		err = fmt.Errorf("%w: JetStream is off", errNoStoreAccess)
	}
	accMu.RUnlock()
	if err != nil {
		return nil, err
	}
	jsaMu, err := fieldAs[sync.RWMutex](jsa.Elem(), "mu")
	if err != nil {
		return nil, err
	}
	jsaMu.RLock()
	streams, err := field(jsa.Elem(), "streams", reflect.Map)
	var mset reflect.Value
	if err == nil {
		if streams.Type().Key().Kind() != reflect.String || streams.Type().Elem().Kind() != reflect.Pointer {
			err = fmt.Errorf("%w: streams is a %s", errNoStoreAccess, streams.Type())
		} else if mset = streams.MapIndex(reflect.ValueOf(stream)); !mset.IsValid() || mset.IsNil() {
			err = fmt.Errorf("%w: no stream %s", errNoStoreAccess, stream)
		}
	}
	jsaMu.RUnlock()
	if err != nil {
		return nil, err
	}
	msetV := reflect.NewAt(mset.Type().Elem(), mset.UnsafePointer()).Elem()
	msetMu, err := fieldAs[sync.RWMutex](msetV, "mu")
	if err != nil {
		return nil, err
	}
	msetMu.RLock()
	st, err := fieldAs[server.StreamStore](msetV, "store")
	var store server.StreamStore
	if err == nil {
		store = *st
	}
	msetMu.RUnlock()
	if err == nil && store == nil {
		err = fmt.Errorf("%w: stream %s has no store", errNoStoreAccess, stream)
	}
	return store, err
}

// field returns the field name of the struct v (addressable) as a value
// that may be read and set although it is unexported, if it is of kind.
func field(v reflect.Value, name string, kind reflect.Kind) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("%w: %s has no field %s", errNoStoreAccess, v.Type(), name)
	}
	if f.Kind() != kind {
		return reflect.Value{}, fmt.Errorf("%w: %s.%s is a %s", errNoStoreAccess, v.Type(), name, f.Type())
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}

// fieldAs returns a pointer to the field name of the struct v
// (addressable), if it is of type T.
func fieldAs[T any](v reflect.Value, name string) (*T, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return nil, fmt.Errorf("%w: %s has no field %s", errNoStoreAccess, v.Type(), name)
	}
	if f.Type() != reflect.TypeFor[T]() {
		return nil, fmt.Errorf("%w: %s.%s is a %s, not a %s", errNoStoreAccess, v.Type(), name, f.Type(), reflect.TypeFor[T]())
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr())), nil
}
