package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// A session is a liveness shared by many candidacies, as etcd's
// concurrency.Session is a lease shared by a process's elections: a
// process that campaigns in many elections opens one session, campaigns in
// each election inside it, and heartbeats the session alone. Every
// candidacy of a session lives while the session does and ends with it:
// when its heartbeats stop for the session's TTL, or when it is closed
// (then as resignations).
//
// Leadership is unchanged by it. A candidacy in a session is a candidacy
// like any other, whose TTL is the session's: each heartbeat of the
// session renews each of its candidacies by that TTL from the moment the
// heartbeat began, as a heartbeat of the candidacy would, and the step-down
// rule holds for each of them from the answer it got (see Record). No
// candidacy outlives the last renewal it was given by more than its TTL,
// whatever becomes of the session, so no leader is kept past its promise.

// ErrSessionNotFound: the session is unknown, closed, or expired.
var ErrSessionNotFound = errors.New("gateway: session not found")

// Session is a session as the Gateway reports it.
type Session struct {
	ID        string
	TTL       time.Duration
	ExpiresAt time.Time // when its candidacies expire unless it heartbeats
	// Candidates are the session's candidacies, by election, as its
	// heartbeat left them (none when it was opened).
	Candidates []SessionCandidate
}

// SessionCandidate is one candidacy of a session, as the session's
// heartbeat left it.
type SessionCandidate struct {
	Election string
	ID       string
	// State and Term are what the candidacy's own heartbeat would answer:
	// StateLeader with its own term while it holds (its fencing token),
	// else the election's term. A process acts as a holder only while
	// its candidacy's entry says StateLeader with the term it acts under:
	// a holdership ended without its word (a failed begin, a lower
	// holders setting) leaves the candidacy in line and renewed, in
	// another state.
	State State
	Term  uint64
	// ExpiresAt is the candidacy's own expiry after the heartbeat: the
	// session's, but for a holder whose renewal the backend leaves out (a
	// leader asked to hand over, on a backend that can leave it out; one
	// whose holdership ended without its word), whose promise is its
	// own.
	ExpiresAt time.Time
}

// ErrSessionInElection: the session already has a candidacy in the
// election. A session campaigns once per election, as etcd's recipe
// campaigns once per election with a session's lease.
var ErrSessionInElection = errors.New("gateway: session already campaigns in the election")

// Sessioner is an optional role of a Backend that keeps sessions itself:
// on etcd a session is one lease that its candidacies share, so that a
// campaign in it writes no lease of its own, and its heartbeat is one
// keep-alive. A backend without it is given sessions by the Gateway over
// its KV and its candidacies' own calls (sessionsKV); that is correct on
// every backend, at a heartbeat per candidacy.
//
// A Sessioner's Campaign puts a Candidacy with Session set in that
// session: it fails with ErrSessionNotFound when the session is unknown or
// has expired, with ErrTokenMismatch when the Candidacy's TokenHash is not
// the session's, and with ErrSessionInElection when the session has a
// candidacy in the election already; the Candidacy's TTL is then the
// session's. The
// candidacy's own Heartbeat renews the whole session. Resign and
// ReportError of one candidacy end that candidacy alone.
type Sessioner interface {
	// OpenSession creates session id with ttl, owned by tokenHash.
	OpenSession(ctx context.Context, id string, ttl time.Duration, tokenHash string) (Session, error)
	// KeepSession renews the session and each of its candidacies by its
	// TTL. Errors: ErrSessionNotFound, ErrTokenMismatch, ErrUnavailable.
	KeepSession(ctx context.Context, id, tokenHash string) (Session, error)
	// CloseSession ends the session: each of its candidacies resigns
	// (a leader hands over at once), then the session is gone. Errors as
	// KeepSession.
	CloseSession(ctx context.Context, id, tokenHash string) error
}

// Prefixes of session ids and tokens, so that a leaked token is
// recognisable and a candidacy's token names its session.
const (
	sessionIDPrefix    = "ses_"
	sessionTokenPrefix = "ecs_"
)

var sessionEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newSessionID returns a fresh session id: 120 random bits, in lower-case
// letters and digits after its prefix, so that it fits a path segment and
// a KV key segment alike.
func newSessionID() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return sessionIDPrefix + strings.ToLower(sessionEncoding.EncodeToString(b))
}

// newSessionToken returns a fresh token of session id: it names the
// session, then 256 random bits.
func newSessionToken(id string) string {
	return sessionTokenPrefix + id + "." + strings.TrimPrefix(NewToken(), tokenPrefix)
}

// sessionOfToken returns the session a token names, if it is a session's.
func sessionOfToken(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, sessionTokenPrefix)
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ".")
	return id, ok && ValidateSessionID(id) == nil
}

// ValidateSessionID checks the form of a session id: its prefix, then 24
// lower-case letters and digits.
func ValidateSessionID(id string) error {
	rest, ok := strings.CutPrefix(id, sessionIDPrefix)
	if !ok || len(rest) != 24 || !validName(rest, 24, false, "") {
		return invalid("session", "%q is not a session id: use the id that POST /v1/sessions returned (%s followed by 24 letters and digits)", clip(id), sessionIDPrefix)
	}
	return nil
}

func checkSession(id, token string) error {
	if err := ValidateSessionID(id); err != nil {
		return err
	}
	if token == "" {
		return invalid("token", "the session token that opening the session returned is required")
	}
	return nil
}

// OpenSession opens a session with ttl (0: the Gateway's DefaultTTL,
// within the candidates' TTL bounds) and returns it with its token, which
// every call on it requires, as do its candidacies' own calls. Errors:
// ErrInvalid, ErrUnavailable.
func (g *Gateway) OpenSession(ctx context.Context, ttl time.Duration) (Session, string, error) {
	if ttl == 0 {
		ttl = g.cfg.DefaultTTL
	}
	if err := validateDuration("ttl", ttl, g.cfg.MinTTL, g.cfg.MaxTTL); err != nil {
		return Session{}, "", err
	}
	id := newSessionID()
	token := newSessionToken(id)
	s, err := g.sessions.OpenSession(ctx, id, ttl, HashToken(token))
	if err != nil {
		return Session{}, "", err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "session opened", slog.String("session", id), slog.Duration("ttl", ttl))
	return s, token, nil
}

// KeepSession renews session id and every candidacy in it by its TTL.
// Errors: ErrInvalid, ErrSessionNotFound (open another), ErrTokenMismatch,
// ErrUnavailable.
func (g *Gateway) KeepSession(ctx context.Context, id, token string) (Session, error) {
	if err := checkSession(id, token); err != nil {
		return Session{}, err
	}
	return g.sessions.KeepSession(ctx, id, HashToken(token))
}

// CloseSession ends session id: each of its candidacies resigns, a leader
// handing over at once. Errors as KeepSession.
func (g *Gateway) CloseSession(ctx context.Context, id, token string) error {
	if err := checkSession(id, token); err != nil {
		return err
	}
	if err := g.sessions.CloseSession(ctx, id, HashToken(token)); err != nil {
		return err
	}
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "session closed", slog.String("session", id))
	return nil
}
