package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/electorhq/elector/gateway"
)

// campaignLeases is how many leases a campaign puts its transaction on
// before it gives up because etcd ended each first.
const campaignLeases = 3

// Campaign implements gateway.Backend: it takes a lease of the candidate's
// TTL (rounded up to whole seconds, and at least etcd's minimum lease TTL)
// from the pool granted ahead (leasePool) or grants one, and in one
// transaction creates its candidacy key at the back of the line and its id
// key, both on the lease, plus the election's settings if it has none. If
// a slot is free (it is among the first N in line, with N holders) it is
// acknowledged as a holder: into an election whose line was empty and
// that had no lead record, from what the transaction proved, by that
// transaction itself once the prefix is declared at data version 2 (see
// firstLead), else right after it (see firstHolder); otherwise as the
// reconcilers do, from the cache once it holds the candidacy. When the
// transaction's answer does not come, etcd is asked whether it applied
// (campaignLanded): if it did, the campaign goes on as if the answer had
// come; if that cannot be told, it fails as unavailable and its lease is
// revoked (revoker), which removes the candidacy if it was written.
// A campaign in a session (c.Session) puts its keys on the session's
// lease instead, in one transaction and nothing else (campaignInSession).
// Errors: gateway.ErrCandidateExists, gateway.ErrUnavailable; in a
// session also gateway.ErrSessionNotFound, gateway.ErrTokenMismatch and
// gateway.ErrSessionInElection.
func (b *Backend) Campaign(ctx context.Context, election string, c gateway.Candidacy, defaults gateway.Settings) (gateway.Status, error) {
	if c.Session != "" {
		return b.campaignInSession(ctx, election, c, defaults)
	}
	op := fmt.Sprintf("campaign %q", c.ID)
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	secs := int64((c.TTL + time.Second - 1) / time.Second)
	var (
		resp  *clientv3.TxnResponse
		one   bool // the transaction was of data version 2: its probe, if it held, acknowledged
		lease pooledLease
		val   candidateValue
		hex   string
		set   settingsValue
	)
	for attempt := 0; ; attempt++ {
		// A lease from the pool while it has one (see leasePool), else
		// one granted now; a pooled lease that etcd ended before the
		// transaction (revoked early) costs a grant and a second try.
		var pooled bool
		if attempt == 0 {
			lease, pooled = b.pool.take(secs)
		}
		if !pooled {
			sent := time.Now()
			grant, err := b.cli.Grant(rctx, secs)
			if err != nil {
				return gateway.Status{}, translate(ctx, op, err)
			}
			lease = pooledLease{id: grant.ID, ttl: grant.TTL, sent: sent}
		}
		b.leases.note(int64(lease.id), lease.ttl, lease.ttl, lease.sent)
		now := b.now()
		hex = leaseHex(int64(lease.id))
		val = candidateValue{Elector: 1, ID: c.ID, Metadata: c.Metadata, TTLms: c.TTL.Milliseconds(), TokenHash: c.TokenHash, Priority: c.Priority, At: now}
		set = settingsOf(defaults, now)
		var renew sync.WaitGroup
		if pooled && time.Since(lease.sent) > poolFresh {
			// Its life counted from the campaign, as a lease granted now.
			renew.Go(func() {
				sent := time.Now()
				if ka, err := b.cli.KeepAliveOnce(rctx, lease.id); err == nil {
					b.leases.note(int64(lease.id), ka.TTL, ka.TTL, sent)
				}
			})
		}
		var err error
		resp, one, err = b.campaignTxn(ctx, rctx, election, c.ID, hex, lease.id, val, set, nil)
		renew.Wait()
		if err != nil && !leaseGone(err) {
			// No answer came (a timeout, a connection lost): the
			// transaction may have applied. Rather than answer 503 and
			// revoke a candidacy that may be in line (its candidate,
			// retrying, would be told it exists), ask etcd.
			if rev, ok := b.campaignLanded(ctx, election, c.ID, hex); ok {
				resp, err = &clientv3.TxnResponse{Header: &pb.ResponseHeader{Revision: rev}, Succeeded: true}, nil
			}
		}
		if leaseGone(err) {
			// etcd ended the lease before the transaction, which then
			// wrote nothing (a plain answer: an unsure outcome is never
			// "lease not found", see do): a pooled lease, or one granted
			// just now, that etcd revoked early, as a member resuming
			// from a freeze does. A new grant is tried; past
			// campaignLeases the campaign is unavailable, never "not
			// found", which would be the answer of a heartbeat.
			b.leases.forget(int64(lease.id))
			if attempt+1 < campaignLeases {
				continue
			}
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: etcd ended each of the %d leases taken for it before its transaction: %w", op, election, campaignLeases, gateway.ErrUnavailable)
		}
		if err == nil && !resp.Succeeded && pooled {
			// Nothing was put on it: back to the pool.
			b.leases.forget(int64(lease.id))
			b.pool.put(secs, lease)
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrCandidateExists)
		}
		if err != nil || !resp.Succeeded {
			b.revokeOwn(lease.id) // its own: a campaign in a session never comes here
			if err != nil {
				return gateway.Status{}, translate(ctx, op, err)
			}
			return gateway.Status{}, fmt.Errorf("etcd: %s in %q: %w", op, election, gateway.ErrCandidateExists)
		}
		break
	}
	return b.campaigned(ctx, op, election, c, resp, one, &entry{hex: hex, name: hex, lease: int64(lease.id), value: val}, set)
}

// campaigned finishes a campaign whose transaction (answering resp; one
// as campaignTxn returns it) created candidacy x with the election's
// settings set: it acknowledges x when that transaction proved the
// election empty, waits for the cache to hold the write, makes the
// actions due, and answers x's status.
func (b *Backend) campaigned(ctx context.Context, op, election string, c gateway.Candidacy, resp *clientv3.TxnResponse, one bool, x *entry, set settingsValue) (gateway.Status, error) {
	// The candidacy is written: from here on the answer is 201 or, when
	// this replica cannot tell what became of it, 503; never "not found".
	rev := resp.Header.Revision
	x.create, x.mod = rev, rev
	if one {
		// Its transaction acknowledged it if its probe held; if not, the
		// reconcile below does what is due, as for any campaign.
	} else if a, ok := b.firstHolder(election, resp, x, set); ok {
		// A failure leaves the acknowledgement to the reconcile below (or
		// to Run), as if it had not been tried.
		if _, err := b.do(ctx, election, a); err != nil {
			b.log.LogAttrs(ctx, slog.LevelDebug, "etcd: acknowledge first holder", slog.String("election", election), slog.String("error", err.Error()))
		}
	}
	// The wait is for the write's own events, which the watch delivers in
	// order: a progress notification, which older etcd members may send
	// ahead of queued events, cannot end it early (see cache).
	if err := b.waitApplied(ctx, rev); err != nil {
		return gateway.Status{}, fmt.Errorf("etcd: %s in %q: written at revision %d, not yet seen by this replica: %w", op, election, rev, err)
	}
	b.reconcileBeforeAnswer(ctx, "campaign", election)
	st, err := b.status(ctx, "campaign", election, c.ID, c.TokenHash)
	if errors.Is(err, gateway.ErrCandidateNotFound) || errors.Is(err, gateway.ErrTokenMismatch) {
		// Gone since its write (its lease expired, a native client
		// deleted its key): the campaign did happen, so not "not found".
		return gateway.Status{}, fmt.Errorf("etcd: %s in %q: written at revision %d, gone since: %w", op, election, rev, gateway.ErrUnavailable)
	}
	return st, err
}

// campaignLanded asks etcd whether a campaign's transaction, whose answer
// did not come, applied: then candidate id's id key holds hex, the
// campaign's lease, which no other transaction writes there. It returns
// the transaction's revision (the id key's create revision). A read that
// fails, or finds the key absent or another lease's, is not proof: ok is
// false and the campaign fails as unsure, revoking its lease, which also
// undoes a transaction still under way (etcd refuses one whose lease is
// gone). The read is linearizable, so it sees the transaction if it
// applied before the read began.
func (b *Backend) campaignLanded(ctx context.Context, election, id, hex string) (rev int64, ok bool) {
	kv, read := b.idKeyNow(ctx, election, id)
	if !read || kv == nil || string(kv.Value) != hex {
		return 0, false
	}
	return kv.CreateRevision, true
}

// idKeyNow reads candidate id's id key from etcd (a linearizable read),
// after a write whose answer did not come: nil when the key is absent;
// read is false when etcd did not answer either.
func (b *Backend) idKeyNow(ctx context.Context, election, id string) (kv *mvccpb.KeyValue, read bool) {
	rctx, cancel := b.reqCtx(ctx)
	defer cancel()
	res, err := b.cli.Get(rctx, b.keys.candidateID(election, id))
	if err != nil {
		return nil, false
	}
	if len(res.Kvs) == 0 {
		return nil, true
	}
	return res.Kvs[0], true
}

// campaignTxn is a campaign's transaction: the candidacy of id at the back
// of election's line and its id key, both on lease, plus the election's
// settings if it has none, guarded by the id key's absence; in session
// in (non-nil) also by sessionGuard's comparisons.
//
// An election whose settings are the defaults every replica reads for an
// election without a settings key (gateway.DefaultSettings, see
// implicit) is created without one when the transaction's probe also
// writes its lead record (data version 2, an empty election): the lead
// record, which no write removes but the election's deletion, makes it
// exist from then on as the settings key would. Only when the probe fails
// (the line or the lead record is there) does the transaction create the
// settings if absent, as ever. So every campaign leaves its election a
// key that outlives its candidacy, and a replica of any version derives
// the same settings either way: no key reads as gateway.DefaultSettings,
// and an acknowledgement compares the settings key's mod revision, 0
// while it is absent, so a Configure that creates it fails every
// acknowledgement planned before it, as a change of the key does. A
// campaign into a fresh election then writes three keys, not four: less
// work for etcd's apply and every replica's watch.
func (b *Backend) campaignTxn(ctx, rctx context.Context, election, id, hex string, lease clientv3.LeaseID, val candidateValue, settings settingsValue, in *sessionInfo) (*clientv3.TxnResponse, bool, error) {
	idKey, setKey := b.keys.candidateID(election, id), b.keys.settings(election)
	ops := []*pb.RequestOp{
		pbPut(idKey, hex, int64(lease)),
		pbPut(b.keys.candidacy(election, hex), mustJSON(val), int64(lease)),
	}
	// The settings, created if absent, else read: a first holder's
	// acknowledgement compares their mod revision.
	createSettings := pbTxn([]*pb.Compare{cmpCreated(setKey, 0)},
		[]*pb.RequestOp{pbPut(setKey, mustJSON(settings), 0)},
		[]*pb.RequestOp{pbGet(setKey)})
	empty, one, err := b.looksEmpty(ctx, election)
	if err != nil {
		return nil, false, err
	}
	if !empty {
		ops = append(ops, createSettings)
	} else {
		// Whether, before this transaction, the line was empty and there
		// was no lead record (etcd evaluates every comparison of a
		// transaction, nested ones too, before any of its writes). Asked
		// only when the cache suggests so: the comparison reads the line.
		probe := []*pb.Compare{cmpNoneUnder(b.keys.line(election)), cmpCreated(b.keys.lead(election), 0)}
		// The answer yes, with every replica declared to read it
		// (oneWrite), writes the lead record naming the candidate, term 0
		// (see firstLead); without, it lets firstHolder acknowledge the
		// candidate at once.
		var then []*pb.RequestOp
		if one {
			then = []*pb.RequestOp{pbPut(b.keys.lead(election), firstLead(hex, val), 0)}
		}
		if one && settings.implicit() {
			// On the default settings the lead record makes the election
			// exist, and no settings key is written; the answer no
			// creates them if absent.
			ops = append(ops, pbTxn(probe, then, []*pb.RequestOp{createSettings}))
		} else {
			ops = append(ops, createSettings, pbTxn(probe, then, nil))
		}
	}
	cmps := []*pb.Compare{cmpCreated(idKey, 0)}
	if in != nil {
		cmps = append(cmps, b.sessionGuard(election, hex, *in)...)
	}
	resp, err := b.commitTxn(rctx, &pb.TxnRequest{Compare: cmps, Success: ops})
	return resp, one, err
}

// firstLead is the lead record that a campaign's transaction writes when
// its comparisons prove that the election's line was empty and it had no
// lead record: the candidate (key hex, value val) is then the head of the
// line with nobody holding, no slot taken and no promise running, the
// view in which the reconcilers acknowledge it (see firstHolder), and the
// record is the one they would write, but for the term: its key's create
// revision, which is this very transaction's revision and unknown before
// it commits, so it is written 0, "the revision of this write", which
// version 2 resolves to the record's mod revision (leadValue.resolve). It
// applies only with that proof: a line with any key, or a lead record,
// leaves the record unwritten, and the reconcilers acknowledge as ever.
// No later write leaves the 0: every writer of the record states the
// terms it read.
func firstLead(hex string, val candidateValue) string {
	var l leadValue
	l.acknowledge(&entry{hex: hex, name: hex, value: val}, val.At) // create 0: term 0
	l.At = val.At
	return mustJSON(l)
}

// looksEmpty reports whether the cache, as it is, holds no candidacy and
// no lead record of election: a campaign then asks etcd whether that is so
// (see firstHolder). A cache that lags only costs the question.
//
// It also reports whether every replica was declared to read a lead record
// written by a campaign's transaction (oneWrite), and fails when this
// replica is older than a declared version (checkVersion).
func (b *Backend) looksEmpty(ctx context.Context, election string) (empty, one bool, err error) {
	_ = b.readCache(ctx, func(st *state) {
		e := st.elections[election]
		empty = e == nil || (len(e.line) == 0 && e.lead == nil)
		one, err = st.oneWrite(), st.checkVersion()
	})
	return empty, one, err
}

// firstHolder returns the acknowledgement of candidacy x, just created by
// the campaign transaction that answered resp, when that transaction
// proved that the line was empty and the election had no lead record
// before it (its last operation: see Campaign): x is then the head of the
// line with nobody holding, no slot taken and no promise running (promises
// belong to the lead record's slots), which is the view of the election
// at x's revision as far as fill reads it, whatever this replica's cache
// holds yet. The action is fill's on that view: guarded by the lead record
// still absent, the settings as the transaction left them and x's key, so
// it applies only if etcd still holds that view when it commits, as every
// acknowledgement (see the package doc, "Who holds": x is the oldest key
// of the line while it exists, every key created later being younger).
// Its term is x's create revision, as for any first holder. A second
// round trip all the same: the lead record, which every version reads,
// names the term, which is the transaction's revision and unknown before
// it commits.
func (b *Backend) firstHolder(election string, resp *clientv3.TxnResponse, x *entry, created settingsValue) (action, bool) {
	if len(resp.Responses) != 4 {
		return action{}, false
	}
	probe, set := resp.Responses[3].GetResponseTxn(), resp.Responses[2].GetResponseTxn()
	if probe == nil || !probe.Succeeded || set == nil {
		return action{}, false
	}
	v := view{name: election, exists: true, settings: created.settings(), settingsMod: resp.Header.Revision, line: []*entry{x}, from: -1}
	if !set.Succeeded {
		// The settings existed: as the cache would read them.
		if len(set.Responses) != 1 || set.Responses[0].GetResponseRange() == nil || len(set.Responses[0].GetResponseRange().Kvs) != 1 {
			return action{}, false
		}
		kv := set.Responses[0].GetResponseRange().Kvs[0]
		var s settingsValue
		v.settings, v.settingsMod = gateway.DefaultSettings(), kv.ModRevision
		if json.Unmarshal(kv.Value, &s) == nil {
			v.settings = s.settings()
		}
	}
	return b.fill(v, b.now(), b.mono.now())
}
