package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// sessionsKV gives sessions to a Backend that does not keep them itself
// (not a Sessioner), over its KV and its candidacies' own calls:
//
//   - sessions/<id>/record holds the session's TTL, token hash and expiry;
//   - sessions/<id>/members/<hash of the election> names its candidacy in
//     that election (one per election, see ErrSessionInElection), written
//     before the campaign, so that a replica that dies between the two
//     leaves a name that a heartbeat drops once it is older than
//     sessionJoinGrace, never a candidacy that the session does not
//     renew (a heartbeat keeps a younger name: its campaign may be under
//     way).
//
// A heartbeat of the session heartbeats its candidacies, sessionBeats at
// a time, then writes the record's new expiry. Each candidacy keeps its own TTL (the
// session's) on the backend, which alone decides its life and its
// leadership: the session adds no path by which a candidacy lives longer
// than its last heartbeat's TTL.
//
// Records of sessions that expired are swept by Run (runSweeper).
type sessionsKV struct {
	b   Backend
	log *slog.Logger
	now func() time.Time
}

const sessionsPrefix = "sessions"

// sessionSweepGrace is how long past its expiry a session's record stays
// before Run sweeps it: a heartbeat that began before the expiry finishes
// well inside it.
const sessionSweepGrace = time.Minute

// sessionBeats is how many of a session's candidacies its heartbeat renews
// at once.
const sessionBeats = 16

type sessionRecord struct {
	TTLms     int64     `json:"ttl_ms"`
	TokenHash string    `json:"token_hash"`
	ExpiresAt time.Time `json:"expires_at"`
	// Closing is set by the first step of a close: no campaign joins the
	// session after it (join reads the record again once its name is
	// written), and only a close goes on with it.
	Closing bool `json:"closing,omitempty"`
}

type sessionMember struct {
	Election string    `json:"election"`
	ID       string    `json:"id"`
	JoinedAt time.Time `json:"joined_at"`
}

// sessionJoinGrace is how long a session's name of a candidacy that the
// backend does not hold is taken for a campaign still under way, rather
// than for a candidacy that is gone: a heartbeat does not drop it, and
// another campaign of the session into its election does not take it
// over. A campaign is answered well within it.
const sessionJoinGrace = time.Minute

// young reports whether a name was written less than sessionJoinGrace ago.
func (k *sessionsKV) young(m sessionMember) bool { return k.now().Sub(m.JoinedAt) < sessionJoinGrace }

func recordKey(id string) string  { return sessionsPrefix + "/" + id + "/record" }
func membersKey(id string) string { return sessionsPrefix + "/" + id + "/members" }

func memberKey(id, election string) string {
	sum := sha256.Sum256([]byte(election))
	return membersKey(id) + "/" + hex.EncodeToString(sum[:16])
}

func (k *sessionsKV) OpenSession(ctx context.Context, id string, ttl time.Duration, tokenHash string) (Session, error) {
	rec := sessionRecord{TTLms: ttl.Milliseconds(), TokenHash: tokenHash, ExpiresAt: k.now().Add(ttl)}
	if _, err := k.b.Create(ctx, recordKey(id), mustMarshal(rec)); err != nil {
		return Session{}, fmt.Errorf("gateway: open session %s: %w", id, unavailableUnless(err))
	}
	return Session{ID: id, TTL: ttl, ExpiresAt: rec.ExpiresAt, Candidates: []SessionCandidate{}}, nil
}

// record reads session id's record and checks its token and expiry.
func (k *sessionsKV) record(ctx context.Context, id, tokenHash string) (sessionRecord, uint64, error) {
	rec, rev, err := k.recordAny(ctx, id, tokenHash)
	if err != nil {
		return sessionRecord{}, 0, err
	}
	if rec.Closing {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: being closed: %w", id, ErrSessionNotFound)
	}
	if !k.now().Before(rec.ExpiresAt) {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: expired at %s: %w", id, rec.ExpiresAt.UTC().Format(time.RFC3339Nano), ErrSessionNotFound)
	}
	return rec, rev, nil
}

// recordAny reads session id's record and checks its token, whether the
// session is closing or expired or not.
func (k *sessionsKV) recordAny(ctx context.Context, id, tokenHash string) (sessionRecord, uint64, error) {
	item, err := k.b.Get(ctx, recordKey(id))
	if errors.Is(err, ErrKeyNotFound) {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: %w", id, ErrSessionNotFound)
	}
	if err != nil {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
	}
	var rec sessionRecord
	if err := json.Unmarshal(item.Value, &rec); err != nil || rec.TTLms <= 0 {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: unreadable record: %w", id, ErrSessionNotFound)
	}
	if !TokenMatches(rec.TokenHash, tokenHash) {
		return sessionRecord{}, 0, fmt.Errorf("gateway: session %s: %w", id, ErrTokenMismatch)
	}
	return rec, item.Revision, nil
}

// sessionName is one name of a session's candidacy and the KV item
// that holds it.
type sessionName struct {
	sessionMember
	item Item
}

// members lists the candidacies named in session id, by election (a
// session names one per election); a name that cannot be read is left
// out (join takes its election over).
func (k *sessionsKV) members(ctx context.Context, id string) ([]sessionName, error) {
	items, err := k.b.List(ctx, membersKey(id))
	if err != nil {
		return nil, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
	}
	names := make([]sessionName, 0, len(items))
	for _, it := range items {
		n := sessionName{item: it}
		if json.Unmarshal(it.Value, &n.sessionMember) == nil {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b sessionName) int { return strings.Compare(a.Election, b.Election) })
	return names, nil
}

func (k *sessionsKV) KeepSession(ctx context.Context, id, tokenHash string) (Session, error) {
	rec, rev, err := k.record(ctx, id, tokenHash)
	if err != nil {
		return Session{}, err
	}
	return k.keep(ctx, id, tokenHash, rec, rev, SessionCandidate{})
}

// keep heartbeats every candidacy of session id but skip (one whose own
// heartbeat was just made, entered as it is), drops the names of those
// that are gone, and writes the session's new expiry, counted from before
// the first heartbeat, over rec read at revision rev (record).
func (k *sessionsKV) keep(ctx context.Context, id, tokenHash string, rec sessionRecord, rev uint64, skip SessionCandidate) (Session, error) {
	began := k.now()
	ms, err := k.members(ctx, id)
	if err != nil {
		return Session{}, err
	}
	ttl := time.Duration(rec.TTLms) * time.Millisecond
	out := Session{ID: id, TTL: ttl, ExpiresAt: began.Add(ttl), Candidates: make([]SessionCandidate, 0, len(ms))}
	results := make([]beatResult, len(ms))
	// The candidacies' heartbeats go sessionBeats at a time: a session's
	// heartbeat takes about as long as its slowest, not their sum.
	sem := make(chan struct{}, sessionBeats)
	var wg sync.WaitGroup
	for i, m := range ms {
		if m.Election == skip.Election && m.ID == skip.ID {
			results[i] = beatResult{c: skip, kept: true}
			continue
		}
		c := SessionCandidate{Election: m.Election, ID: m.ID, ExpiresAt: out.ExpiresAt}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = k.beat(ctx, id, tokenHash, m, c)
		})
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return Session{}, r.err
		}
		if r.kept {
			out.Candidates = append(out.Candidates, r.c)
		}
	}
	// The record's expiry moves to this heartbeat's, unless another has
	// written a later one meanwhile.
	for attempt := 0; ; attempt++ {
		if !out.ExpiresAt.After(rec.ExpiresAt) {
			break
		}
		rec.ExpiresAt = out.ExpiresAt
		_, err := k.b.Update(ctx, recordKey(id), mustMarshal(rec), rev)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrRevisionMismatch) || attempt == 2 {
			return Session{}, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
		}
		// Written since: by another heartbeat, or a close.
		if rec, rev, err = k.record(ctx, id, tokenHash); err != nil {
			return Session{}, err
		}
	}
	return out, nil
}

// beatResult is what a session's heartbeat learnt of one candidacy: still
// the session's (kept), with its expiry, or an error that fails the whole
// heartbeat.
type beatResult struct {
	c    SessionCandidate
	kept bool
	err  error
}

// notTheSessions reports whether err, a backend's answer about a
// candidacy the session names, says it is no longer the session's: gone
// (resigned, expired), or its id campaigning again with another token.
func notTheSessions(err error) bool {
	return errors.Is(err, ErrCandidateNotFound) || errors.Is(err, ErrElectionNotFound) || errors.Is(err, ErrTokenMismatch)
}

// beat heartbeats one candidacy of session id for its heartbeat, and
// tells whether it is still the session's, with its expiry; one that is
// gone has its name dropped.
func (k *sessionsKV) beat(ctx context.Context, id, tokenHash string, m sessionName, c SessionCandidate) (r beatResult) {
	r.c = c
	st, err := k.b.Heartbeat(ctx, c.Election, c.ID, tokenHash)
	switch {
	case err == nil:
		r.c.State, r.c.Term, r.kept = st.Candidate.State, st.Term, true
	case errors.Is(err, ErrTransferPending):
		// A leader asked to hand over is not renewed (see
		// Record.Transfer); its promise is its own expiry, which the
		// answer names.
		e, err := k.b.Election(ctx, c.Election)
		was, ok := StatusOf(e, c.ID)
		if err != nil || !ok {
			r.err = fmt.Errorf("gateway: session %s: candidate %q of %q, asked to hand over: its expiry unread: %w", id, c.ID, c.Election, ErrUnavailable)
			return r
		}
		r.c.State, r.c.Term, r.c.ExpiresAt, r.kept = was.Candidate.State, was.Term, was.Candidate.ExpiresAt, true
	case notTheSessions(err):
		// Resigned, expired, or the id campaigns again outside the
		// session: no longer the session's. A name written a moment ago
		// may be of a campaign under way: it stays, unlisted.
		if k.young(m.sessionMember) {
			return r
		}
		if err := k.b.Delete(ctx, m.item.Key, m.item.Revision); err != nil && !errors.Is(err, ErrRevisionMismatch) {
			k.log.LogAttrs(ctx, slog.LevelDebug, "session: drop a candidacy's name", slog.String("session", id), slog.String("error", err.Error()))
		}
	default:
		r.err = fmt.Errorf("gateway: session %s: heartbeat %q of %q: %w", id, c.ID, c.Election, unavailableUnless(err))
	}
	return r
}

func (k *sessionsKV) CloseSession(ctx context.Context, id, tokenHash string) error {
	rec, rev, err := k.recordAny(ctx, id, tokenHash)
	if err != nil {
		return err
	}
	if !rec.Closing {
		// First, no campaign joins any more (join reads the record again
		// after writing its name). An expired session is closed all the
		// same: its candidacies may outlive it by their own heartbeats.
		rec.Closing = true
		if _, err := k.b.Update(ctx, recordKey(id), mustMarshal(rec), rev); err != nil {
			if errors.Is(err, ErrRevisionMismatch) {
				return k.CloseSession(ctx, id, tokenHash)
			}
			return fmt.Errorf("gateway: close session %s: %w", id, unavailableUnless(err))
		}
	}
	ms, err := k.members(ctx, id)
	if err != nil {
		return err
	}
	// Resign each, and remove the record last: a close cut short leaves a
	// closing session that a second close finishes.
	for _, m := range ms {
		err := k.b.Resign(ctx, m.Election, m.ID, tokenHash)
		if err != nil && !notTheSessions(err) {
			return fmt.Errorf("gateway: close session %s: resign %q of %q: %w", id, m.ID, m.Election, unavailableUnless(err))
		}
		if err := k.b.Delete(ctx, m.item.Key, 0); err != nil {
			return fmt.Errorf("gateway: close session %s: %w", id, unavailableUnless(err))
		}
	}
	if err := k.b.Delete(ctx, recordKey(id), 0); err != nil {
		return fmt.Errorf("gateway: close session %s: %w", id, unavailableUnless(err))
	}
	return nil
}

// join names candidacy (election, cand) in session id before its
// campaign, and returns the session's TTL and an undo for a campaign that
// failed for sure (nil when the name was there already: a campaign again
// of the same id). It reads the record again once the name is written, so
// that a close that began meanwhile (and may have listed the names before
// this one) refuses the campaign rather than leave it behind. Errors:
// ErrSessionInElection when the session names another live candidacy in
// election (or one written a moment ago, whose campaign may be under
// way), and those of record.
func (k *sessionsKV) join(ctx context.Context, id, tokenHash, election, cand string) (time.Duration, func(), error) {
	rec, _, err := k.record(ctx, id, tokenHash)
	if err != nil {
		return 0, nil, err
	}
	ttl := time.Duration(rec.TTLms) * time.Millisecond
	key := memberKey(id, election)
	val := mustMarshal(sessionMember{Election: election, ID: cand, JoinedAt: k.now()})
	for range 3 {
		rev, err := k.b.Create(ctx, key, val)
		if err == nil {
			undo := func() { _ = k.b.Delete(context.WithoutCancel(ctx), key, rev) }
			if _, _, err := k.record(ctx, id, tokenHash); err != nil {
				undo()
				return 0, nil, err
			}
			return ttl, undo, nil
		}
		if !errors.Is(err, ErrRevisionMismatch) {
			return 0, nil, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
		}
		item, err := k.b.Get(ctx, key)
		if errors.Is(err, ErrKeyNotFound) {
			continue // dropped meanwhile
		}
		if err != nil {
			return 0, nil, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
		}
		var m sessionMember
		readable := json.Unmarshal(item.Value, &m) == nil
		if readable && m.ID == cand {
			return ttl, nil, nil
		}
		if readable {
			// Another candidacy's name: still the session's if it is live,
			// or if it is young (its campaign may not have applied yet).
			if k.young(m) {
				return 0, nil, fmt.Errorf("gateway: session %s: candidate %q in %q: %w", id, m.ID, election, ErrSessionInElection)
			}
			err := k.b.CheckToken(ctx, m.Election, m.ID, tokenHash)
			switch {
			case err == nil:
				return 0, nil, fmt.Errorf("gateway: session %s: candidate %q in %q: %w", id, m.ID, election, ErrSessionInElection)
			case !notTheSessions(err):
				return 0, nil, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
			}
		}
		// A stale name (or an unreadable one): taken over.
		if err := k.b.Delete(ctx, key, item.Revision); err != nil && !errors.Is(err, ErrRevisionMismatch) {
			return 0, nil, fmt.Errorf("gateway: session %s: %w", id, unavailableUnless(err))
		}
	}
	return 0, nil, fmt.Errorf("gateway: session %s: its candidacy in %q keeps changing: %w", id, election, ErrUnavailable)
}

// sweep removes the records and names of sessions expired for more than
// sessionSweepGrace, and the names left without a record (a campaign that
// raced a close). A record written since it was listed stays (its delete
// names the listed revision); a session's record is written before any of
// its names, so a name listed without one is such a leftover.
func (k *sessionsKV) sweep(ctx context.Context) {
	items, err := k.b.List(ctx, sessionsPrefix)
	if err != nil {
		k.log.LogAttrs(ctx, slog.LevelDebug, "session sweep", slog.String("error", err.Error()))
		return
	}
	now := k.now()
	live := map[string]bool{}
	for _, it := range items {
		id, ok := strings.CutSuffix(strings.TrimPrefix(it.Key, sessionsPrefix+"/"), "/record")
		if !ok {
			continue
		}
		var rec sessionRecord
		if json.Unmarshal(it.Value, &rec) == nil && now.Before(rec.ExpiresAt.Add(sessionSweepGrace)) {
			live[id] = true
			continue
		}
		if err := k.b.Delete(ctx, it.Key, it.Revision); err != nil {
			live[id] = true // written since: not expired after all
		}
	}
	for _, it := range items {
		id, _, _ := strings.Cut(strings.TrimPrefix(it.Key, sessionsPrefix+"/"), "/")
		if strings.HasPrefix(it.Key, membersKey(id)+"/") && !live[id] {
			_ = k.b.Delete(ctx, it.Key, it.Revision)
		}
	}
}

// unavailableUnless passes err if it is one of the Gateway's kinds, else
// wraps it as ErrUnavailable: a KV failure that is not an answer.
func unavailableUnless(err error) error {
	for _, kind := range []error{ErrUnavailable, ErrSessionNotFound, ErrTokenMismatch, ErrInvalid, ErrLimit, ErrSessionInElection} {
		if errors.Is(err, kind) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// runSweeper sweeps expired sessions every sessionSweepGrace until ctx
// ends.
func (k *sessionsKV) runSweeper(ctx context.Context) {
	t := time.NewTicker(sessionSweepGrace)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.sweep(ctx)
		}
	}
}
