package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// dataVersion is the version of what this replica reads and may write
// under the prefix. Version 2 reads a lead record in the one-holder form
// whose "term" is 0: a holdership acknowledged in the transaction that
// created its key, whose term is that transaction's revision, the
// record's mod revision and its key's create revision at once (leadValue,
// resolve). Version 1 (every version before) reads such a record as a
// holder whose key has gone, and must never see one (see oneWrite).
const dataVersion = 2

// DataVersion is the data version this build writes and reads: the one
// DeclareUpgraded declares.
const DataVersion = dataVersion

// VersionKey is the key DeclareUpgraded writes: <prefix>/_elector/version.
func (b *Backend) VersionKey() string { return b.keys.version() }

// versionValue is p/_elector/version: {"min":2,"at":"…"}, the oldest data
// version that every replica using the prefix runs, as the operator
// declared it once the last replica was upgraded (DeclareUpgraded, or
// etcdctl put <prefix>/_elector/version '{"min":2}'). Replicas of older
// versions ignore the key; a replica of this version that finds a higher
// one refuses to serve (checkVersion).
type versionValue struct {
	Min int       `json:"min"`
	At  time.Time `json:"at"`
}

// parseVersion reads the declared version; a value that is not one reads
// as none (0), which holds this replica to what every version reads.
func parseVersion(b []byte) int {
	var v versionValue
	if json.Unmarshal(b, &v) != nil || v.Min < 0 {
		return 0
	}
	return v.Min
}

// oneWrite reports whether a campaign into an empty election may
// acknowledge its candidate in its own transaction, writing the lead
// record with term 0 (version 2): only once every replica was declared to
// read it. Why no two leaders with mixed versions: until the declaration,
// no replica writes that form, and every record is one that versions 1
// and 2 read alike (the second transaction names the term); a version 1
// replica misreads a term-0 record (its holder's key as gone, the
// holder's later promises as another holdership's) and could acknowledge
// a second holder while the first still holds, so the declaration is
// the operator's word that none runs, and a replica older than a
// declaration it knows refuses to serve rather than misread (below).
func (s *state) oneWrite() bool { return s.minVersion >= dataVersion }

// checkVersion returns an error when the prefix declares that every
// replica runs a data version newer than this one: this replica may
// misread what those write, so its readiness probe (Ping) and campaigns
// fail, and its reconciler acts on nothing.
func (s *state) checkVersion() error {
	if s.minVersion > dataVersion {
		return fmt.Errorf("etcd: the prefix declares (p/_elector/version) that every replica runs data version %d or later; this replica runs %d and would misread what they write: upgrade it: %w", s.minVersion, dataVersion, gateway.ErrUnavailable)
	}
	return nil
}

// DeclareUpgraded declares, in p/_elector/version, that every replica
// using the prefix runs this version or a later one, so that campaigns
// into empty elections acknowledge their candidate in one transaction
// instead of two (see oneWrite). Call it only once no replica of an
// earlier version runs or will start: those would misread the lead
// records written so. It never lowers a declared version.
func (b *Backend) DeclareUpgraded(ctx context.Context) error {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	key := b.keys.version()
	for {
		got, err := b.cli.Get(rctx, key)
		if err != nil {
			return translate(ctx, "declare upgraded", err)
		}
		mod := int64(0)
		if len(got.Kvs) == 1 {
			if parseVersion(got.Kvs[0].Value) >= dataVersion {
				return b.catchUp(ctx, got.Header.Revision)
			}
			mod = got.Kvs[0].ModRevision
		}
		resp, err := b.cli.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", mod)).
			Then(clientv3.OpPut(key, mustJSON(versionValue{Min: dataVersion, At: b.now()}))).Commit()
		if err != nil {
			return translate(ctx, "declare upgraded", err)
		}
		if resp.Succeeded {
			return b.waitApplied(ctx, resp.Header.Revision)
		}
	}
}
