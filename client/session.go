package client

import (
	"context"
	"net/http"
	"time"
)

// Session is one liveness shared by many candidacies, as etcd's
// concurrency.Session is one lease shared by a process's elections: a
// process that campaigns in many elections opens a session, campaigns in
// each with CampaignRequest.Session, and heartbeats the session alone.
// Every candidacy of the session ends with it: when its heartbeats stop
// for its TTL, or when it is closed (then as resignations).
type Session struct {
	ID        string   `json:"id"`
	TTL       Duration `json:"ttl"`
	ExpiresAt Time     `json:"expires_at"` // when its candidacies expire unless it heartbeats
	// Candidates are the session's candidacies, as its heartbeat left
	// them; none when it was opened.
	Candidates []SessionCandidate `json:"candidates"`
}

// SessionCandidate is one candidacy of a session.
type SessionCandidate struct {
	Election string `json:"election"`
	ID       string `json:"id"`
	// State is the candidacy's state, as its own heartbeat would answer
	// it. A holder that the gateway deposed (a failed begin webhook, a
	// lowered holders setting) is still renewed by the session's
	// heartbeats, as a follower or in error: it must not act as leader,
	// whatever its ExpiresAt.
	State State `json:"state"`
	// Term is the candidacy's own term, its fencing token, while it is a
	// leader; otherwise the election's term.
	Term uint64 `json:"term"`
	// ExpiresAt is the candidacy's own expiry: the session's, but for a
	// leader asked to hand over (a transfer), which a heartbeat does not
	// renew. A leader must stop acting by then unless renewed again; see
	// Session.StepDownDeadline.
	ExpiresAt Time `json:"expires_at"`
}

// Candidate returns the session's candidacy in election, if it has one.
func (s Session) Candidate(election string) (SessionCandidate, bool) {
	for _, c := range s.Candidates {
		if c.Election == election {
			return c, true
		}
	}
	return SessionCandidate{}, false
}

// StepDownDeadline applies the step-down rule to the session's candidacy
// in election, s being the answer of a heartbeat sent at sent (by this
// process's clock), for a leader of that election that leads with term
// (the term its campaign, or the last answer, gave it). It returns true
// only when the candidacy is a leader with that very term; then the
// deadline is when the leader must stop acting unless a later heartbeat
// renews it: sent plus what the heartbeat gave the candidacy (the
// session's TTL, less for a leader asked to hand over) minus
// StepDownMargin of the TTL. The gateway's times are compared only with
// each other, so the two clocks need not agree.
//
// A leader must stop acting at once when it returns false: the session
// has no candidacy in election, or the gateway deposed it (a follower or
// in error, though the heartbeat renewed it), or it leads with another
// term (it lost the leadership and won it again, so what it did under
// term is fenced off).
func (s Session) StepDownDeadline(election string, term uint64, sent time.Time) (time.Time, bool) {
	c, ok := s.Candidate(election)
	if !ok || c.State != StateLeader || c.Term != term {
		return time.Time{}, false
	}
	ttl := time.Duration(s.TTL)
	// The session's expiry is the heartbeat's start on the gateway's
	// clock plus the TTL; the candidacy's is at most that.
	given := min(c.ExpiresAt.Sub(s.ExpiresAt.Add(-ttl)), ttl)
	return sent.Add(given - StepDownMargin(ttl)), true
}

// OpenSession opens a session whose candidacies live ttl without a
// heartbeat (0 takes the gateway's default TTL) and returns it with its
// token: HeartbeatSession, CloseSession and each campaign in the session
// need it, and it is the token of each of the session's candidacies too
// (their own Heartbeat, which renews the whole session, Resign and
// ReportError).
//
// Errors: ErrInvalidRequest (a ttl outside the gateway's bounds),
// ErrLimitReached, ErrUnavailable.
func (c *Client) OpenSession(ctx context.Context, ttl time.Duration) (Session, string, error) {
	var body any
	if ttl != 0 {
		body = map[string]string{"ttl": ttl.String()}
	}
	var out struct {
		Session
		Token string `json:"token"`
	}
	err := c.do(ctx, http.MethodPost, body, "", &out, "v1", "sessions")
	return out.Session, out.Token, err
}

// HeartbeatSession renews session id and every candidacy in it by the
// session's TTL, and returns them, each with its own ExpiresAt, State and
// Term. Heartbeat every TTL/3, as a candidate does; a leader in the
// session obeys the step-down rule on each answer
// (Session.StepDownDeadline, with the term it leads with), and stops
// acting as soon as an answer no longer shows its candidacy leading with
// that term.
//
// Errors: ErrSessionNotFound when the session was closed or expired, its
// candidacies with it (open another and campaign again),
// ErrSessionTokenMismatch, ErrSessionTokenMissing, ErrUnavailable.
func (c *Client) HeartbeatSession(ctx context.Context, id, token string) (Session, error) {
	var s Session
	err := c.doSession(ctx, http.MethodPut, nil, token, &s, "v1", "sessions", id, "heartbeat")
	return s, err
}

// CloseSession ends session id: each of its candidacies resigns, a leader
// handing over to the next in line at once.
//
// Errors: as HeartbeatSession.
func (c *Client) CloseSession(ctx context.Context, id, token string) error {
	return c.doSession(ctx, http.MethodDelete, nil, token, nil, "v1", "sessions", id)
}
