package etcd

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// internalDir is the directory, under the prefix, of everything that is
// elector's own. Election names start with a letter or digit, so no
// election's line (<prefix>/<election>/) can ever include it.
const internalDir = "_elector"

// keys is the key layout under one prefix p (no trailing slash):
//
//	p/<election>/<lease-hex>                  candidacy: the line, shared with concurrency.Election
//	p/<election>/<lease-hex>.moved            the same, after a move (see movedSuffix)
//	p/_elector/settings/<election>            settings (no lease)
//	p/_elector/lead/<election>                lead record: the acknowledged holderships, their slots (no lease, lead.go)
//	p/_elector/mark/<election>                why the last key removed by elector went (no lease)
//	p/_elector/promise/<election>             a holder's promise: its last acknowledged heartbeat (no lease, promise.go)
//	p/_elector/promise/<election>/<term>      the same, per holdership, with the lead record's list form
//	p/_elector/revoked/<election>/<lease-hex> a candidacy etcd ended before its TTL (on a lease of its own, revoked.go)
//	p/_elector/cooling/<election>/<lease-hex> candidate in error cooldown (on its lease)
//	p/_elector/ids/<election>/<candidate-id>  candidate id → lease hex (on its lease)
//	p/_elector/handover/<election>            marker of a handover delay (on a lease of its own, timers.go)
//	p/_elector/handover/<election>/<term>     the same, per slot, with the lead record's list form
//	p/_elector/cooldown/<election>/<lease-hex> marker of a cooldown (on a lease of its own, timers.go)
//	p/_elector/sessions/<session-id>          a session (on its lease, sessions.go), no election's
//	p/_elector/kv/<key>                       gateway.KV (kv.go), no election's
//	p/_elector/barrier                        written to move the caches' watches, no election's
//	p/_elector/version                        the oldest data version the replicas run (version.go), no election's
type keys struct{ p string }

func (k keys) root() string         { return k.p + "/" }
func (k keys) line(e string) string { return k.p + "/" + e + "/" }
func (k keys) internal(kind, e string) string {
	return k.p + "/" + internalDir + "/" + kind + "/" + e
}
func (k keys) settings(e string) string        { return k.internal("settings", e) }
func (k keys) lead(e string) string            { return k.internal("lead", e) }
func (k keys) mark(e string) string            { return k.internal("mark", e) }
func (k keys) promise(e string) string         { return k.internal("promise", e) }
func (k keys) promiseOf(e, name string) string { return joinName(k.promise(e), name) }
func (k keys) revoked(e, hex string) string    { return k.internal("revoked", e) + "/" + hex }
func (k keys) candidacy(e, hex string) string  { return k.line(e) + hex }
func (k keys) cooling(e, hex string) string    { return k.internal("cooling", e) + "/" + hex }
func (k keys) candidateID(e, id string) string { return k.internal("ids", e) + "/" + id }

// handoverMark and cooldownMark are the marker keys of timers (timers.go).
func (k keys) handoverMark(e string) string         { return k.internal("handover", e) }
func (k keys) handoverMarkOf(e, name string) string { return joinName(k.handoverMark(e), name) }
func (k keys) cooldownMark(e, hex string) string    { return k.internal("cooldown", e) + "/" + hex }

// joinName is key/name, or key itself for name "": the keys of promises
// and handover markers are per election in the lead record's one-holder
// form and per term in its list form (see termName).
func joinName(key, name string) string {
	if name == "" {
		return key
	}
	return key + "/" + name
}

// termName is the last component of the per-term keys of holdership term
// with the lead record in its list form, "" in its one-holder form.
func termName(list bool, term uint64) string {
	if !list {
		return ""
	}
	return strconv.FormatUint(term, 10)
}

// parseTerm reads a per-term key's last component.
func parseTerm(name string) (uint64, bool) {
	if name == "" || name[0] == '0' {
		return 0, false
	}
	t, err := strconv.ParseUint(name, 10, 64)
	return t, err == nil
}

// barrier is the key a replica writes to be sure its watch delivers a
// revision (see Backend.catchUp). It is no election's: parse ignores it.
func (k keys) barrier() string { return k.p + "/" + internalDir + "/barrier" }

// session is the key of session id (sessions.go), on the session's
// lease. It is no election's: parse gives it kindSession, and electionOf
// "", so that campaigns of one session into many elections, which all
// compare it, may share a batch (batch.go).
func (k keys) session(id string) string { return k.sessionsDir() + id }
func (k keys) sessionsDir() string      { return k.p + "/" + internalDir + "/sessions/" }

// version is the key that declares the oldest data version every replica
// runs (version.go). It is no election's: parse ignores it.
func (k keys) version() string { return k.p + "/" + internalDir + "/version" }

// kvDir is the directory of the KV's keys: p/_elector/kv/. It is no
// election's and parse ignores it first thing.
func (k keys) kvDir() string        { return k.p + "/" + internalDir + "/kv/" }
func (k keys) kv(key string) string { return k.kvDir() + key }
func (k keys) kvEnd() string        { return clientv3.GetPrefixRangeEnd(k.kvDir()) }
func (k keys) rootEnd() string      { return clientv3.GetPrefixRangeEnd(k.root()) }

// movedSuffix marks the second name an elector candidacy key can have.
// Moving a key to the back of the line means deleting it and creating it
// again (a new create revision) on the same lease, in one transaction; etcd
// refuses a transaction that deletes and puts the same key, so a moved key
// alternates between p/<election>/<lease-hex> and
// p/<election>/<lease-hex>.moved. Native clients order by create revision
// and never look at the names.
const movedSuffix = ".moved"

// movedName is the name an elector candidacy key named name (of lease hex)
// takes when it moves.
func movedName(name, hex string) string {
	if name == hex {
		return hex + movedSuffix
	}
	return hex
}

// leaseHex names a lease the way concurrency.Election names its key.
func leaseHex(lease int64) string { return fmt.Sprintf("%x", lease) }

type keyKind int

const (
	kindOther keyKind = iota
	kindCandidacy
	kindSettings
	kindLead
	kindMark
	kindCooling
	kindID
	kindHandoverMark
	kindCooldownMark
	kindPromise
	kindRevoked
	kindSession // a session (no election's: name is the session's id)
)

// parsedKey is what a key under the prefix stands for: its kind, its
// election, and its last component (lease hex or candidate id).
type parsedKey struct {
	kind     keyKind
	election string
	name     string
}

// electionOf returns the function that names the election whose keys a
// key (or a range from it) lies in, as a part of the key, or nil for a key
// of no election (the KV, the sessions, the version, the barrier, another
// prefix). Unlike parse it takes any key under an election's directories,
// ranges' starts included, and it does not check the name: a key whose
// name is not an election's only keeps its write out of a batch with
// others that name the same (batcher). The prefixes are built once.
func (k keys) electionOf() func(key []byte) []byte {
	root, kv, sessions := []byte(k.root()), []byte(k.kvDir()), []byte(k.sessionsDir())
	internal := []byte(internalDir + "/")
	return func(key []byte) []byte {
		rest, ok := bytes.CutPrefix(key, root)
		if !ok || bytes.HasPrefix(key, kv) || bytes.HasPrefix(key, sessions) {
			return nil
		}
		if in, ok := bytes.CutPrefix(rest, internal); ok {
			_, rest, _ = bytes.Cut(in, []byte("/"))
		}
		e, _, _ := bytes.Cut(rest, []byte("/"))
		if len(e) == 0 {
			return nil
		}
		return e
	}
}

// parse classifies key. Keys that fit no part of the layout, or name an
// invalid election, are kindOther and ignored.
func (k keys) parse(key string) parsedKey {
	rest, ok := strings.CutPrefix(key, k.root())
	if !ok {
		return parsedKey{}
	}
	if strings.HasPrefix(key, k.kvDir()) {
		return parsedKey{} // the KV: no election's
	}
	if id, ok := strings.CutPrefix(key, k.sessionsDir()); ok {
		if gateway.ValidateSessionID(id) != nil {
			return parsedKey{}
		}
		return parsedKey{kind: kindSession, name: id} // no election's
	}
	if in, ok := strings.CutPrefix(rest, internalDir+"/"); ok {
		kind, tail, _ := strings.Cut(in, "/")
		e, name, nested := strings.Cut(tail, "/")
		if gateway.ValidateElectionName(e) != nil {
			return parsedKey{}
		}
		switch {
		case kind == "settings" && !nested:
			return parsedKey{kind: kindSettings, election: e}
		case kind == "lead" && !nested:
			return parsedKey{kind: kindLead, election: e}
		case kind == "mark" && !nested:
			return parsedKey{kind: kindMark, election: e}
		case kind == "cooling" && nested && name != "":
			return parsedKey{kind: kindCooling, election: e, name: name}
		case kind == "ids" && nested && name != "":
			return parsedKey{kind: kindID, election: e, name: name}
		case kind == "handover" && !nested:
			return parsedKey{kind: kindHandoverMark, election: e}
		case kind == "handover" && validTerm(name):
			return parsedKey{kind: kindHandoverMark, election: e, name: name}
		case kind == "cooldown" && nested && name != "":
			return parsedKey{kind: kindCooldownMark, election: e, name: name}
		case kind == "promise" && !nested:
			return parsedKey{kind: kindPromise, election: e}
		case kind == "promise" && validTerm(name):
			return parsedKey{kind: kindPromise, election: e, name: name}
		case kind == "revoked" && nested && name != "":
			return parsedKey{kind: kindRevoked, election: e, name: name}
		}
		return parsedKey{}
	}
	e, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" || strings.Contains(name, "/") || gateway.ValidateElectionName(e) != nil {
		return parsedKey{}
	}
	return parsedKey{kind: kindCandidacy, election: e, name: name}
}

// validTerm reports whether name is a per-term key's last component.
func validTerm(name string) bool {
	_, ok := parseTerm(name)
	return ok
}
