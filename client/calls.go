package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Campaign enters the candidate r.ID in election and returns its status
// and its token, which Heartbeat, Resign and ReportError need. The
// election is created by its first campaign.
//
// Errors: ErrCandidateExists when r.ID already campaigns (resign it with
// its token or wait for its TTL), ErrInvalidRequest for a bad name, id,
// TTL or metadata, ErrLimitReached, ErrUnavailable. In a session (r.Session)
// also ErrSessionNotFound, ErrSessionInElection, ErrSessionTokenMissing and
// ErrSessionTokenMismatch.
func (c *Client) Campaign(ctx context.Context, election string, r CampaignRequest) (Status, string, error) {
	var out struct {
		Status
		Token string `json:"token"`
	}
	err := c.doSession(ctx, http.MethodPost, r, r.SessionToken, &out, "v1", "elections", election, "candidates")
	return out.Status, out.Token, err
}

// Heartbeat keeps candidate id alive for another TTL and returns its
// status: whether it leads, its term and the current leader.
//
// Errors: ErrCandidateNotFound when the candidacy resigned or expired
// (campaign again; also ErrCandidacyRevoked when the backend ended it
// before its TTL), ErrTokenMismatch, ErrUnavailable.
func (c *Client) Heartbeat(ctx context.Context, election, id, token string) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodPut, nil, token, &st, "v1", "elections", election, "candidates", id, "heartbeat")
	return st, err
}

// Resign withdraws candidate id; a leader resigning hands over to the next
// in line at once.
//
// Errors: ErrCandidateNotFound, ErrTokenMismatch, ErrUnavailable.
func (c *Client) Resign(ctx context.Context, election, id, token string) error {
	return c.do(ctx, http.MethodDelete, nil, token, nil, "v1", "elections", election, "candidates", id)
}

// ReportError tells the gateway that candidate id cannot lead (its begin
// handler failed, say): a leader gives up leadership at once, and the
// candidate rejoins the back of the line after the election's error
// cooldown if it keeps heartbeating. reason is shown in the leader.error
// event; it must not carry secrets.
//
// Errors: ErrCandidateNotFound, ErrTokenMismatch, ErrInvalidRequest (a
// reason over 1 KiB), ErrUnavailable.
func (c *Client) ReportError(ctx context.Context, election, id, token, reason string) (Status, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var st Status
	err := c.do(ctx, http.MethodPost, body, token, &st, "v1", "elections", election, "candidates", id, "error")
	return st, err
}

// Transfer asks the leader of election to hand over to follower to. With
// leaderToken "" the caller acts as an operator (its API token needs the
// admin scope); otherwise leaderToken is the leader's own candidate token.
// The answer is the election with its pending Transfer: the target leads
// once the leader hands over or its TTL runs out.
//
// Errors: ErrNoLeader, ErrNotFollower, ErrNotLeader (the token is not the
// leader's), ErrTransferPending (to another target), ErrTransferBlocked,
// ErrNotSupported, ErrElectionNotFound, ErrForbidden, ErrUnavailable.
func (c *Client) Transfer(ctx context.Context, election, to, leaderToken string) (Election, error) {
	return c.TransferFrom(ctx, election, "", to, leaderToken)
}

// TransferFrom is Transfer naming the holder that should hand over, for an
// election with several holders (its holders setting above 1): an operator
// must name one while more than one holds; with a holder's own token, from
// may be "" (the token says which) or must be that holder. With from "" it
// is Transfer.
//
// Errors: as Transfer, and ErrInvalidRequest (several hold and from is
// ""), ErrNotLeader (from does not hold), ErrNotSupported (a backend
// without several holders, when from is named).
func (c *Client) TransferFrom(ctx context.Context, election, from, to, holderToken string) (Election, error) {
	body := map[string]string{"to": to}
	if from != "" {
		body["from"] = from
	}
	var e Election
	err := c.do(ctx, http.MethodPost, body, holderToken, &e, "v1", "elections", election, "transfer")
	return e, err
}

// CancelTransfer cancels the pending transfer of election while its leader
// still leads: the leader goes on leading in the same term and its
// heartbeats count again. With leaderToken "" the caller acts as an
// operator (its API token needs the admin scope); otherwise leaderToken is
// the leader's own candidate token. The answer is the election, with no
// Transfer.
//
// Errors: ErrNoTransfer (none pending, or the leadership it asked to hand
// over has ended), ErrNotLeader (the token is not the leader's),
// ErrPreemptOn, ErrNotSupported, ErrElectionNotFound, ErrForbidden,
// ErrUnavailable.
func (c *Client) CancelTransfer(ctx context.Context, election, leaderToken string) (Election, error) {
	var e Election
	err := c.do(ctx, http.MethodDelete, nil, leaderToken, &e, "v1", "elections", election, "transfer")
	return e, err
}

// Handover ends the leadership of candidate id in favour of the pending
// transfer's target, which leads at once with the next term; id stays in
// line as a follower. Call it only once the candidate has stopped acting
// as leader.
//
// Errors: ErrNoTransfer, ErrNotLeader, ErrCandidateNotFound,
// ErrTokenMismatch, ErrNotSupported, ErrUnavailable.
func (c *Client) Handover(ctx context.Context, election, id, token string) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodPost, nil, token, &st, "v1", "elections", election, "candidates", id, "handover")
	return st, err
}

// SettingsPatch changes some settings of an election; nil fields stay as
// they are.
type SettingsPatch struct {
	ErrorCooldown *time.Duration
	HandoverDelay *time.Duration
	// Preempt lets a follower of higher priority than the leader take
	// over through a transfer; it needs a backend with transfers.
	Preempt *bool
	// Holders is how many candidates hold the election at once, 1 to 64;
	// above 1 it needs a backend that holds several (the embedded and
	// NATS backends). Lowering it ends the newest holderships.
	Holders *int
}

// MarshalJSON writes the merge patch of the API.
func (p SettingsPatch) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if p.ErrorCooldown != nil {
		m["error_cooldown"] = p.ErrorCooldown.String()
	}
	if p.HandoverDelay != nil {
		m["handover_delay"] = p.HandoverDelay.String()
	}
	if p.Preempt != nil {
		m["preempt"] = *p.Preempt
	}
	if p.Holders != nil {
		m["holders"] = *p.Holders
	}
	return json.Marshal(m)
}

// Configure applies p to election's settings, creating the election if it
// does not exist (the API token needs the admin scope).
//
// Errors: ErrInvalidRequest, ErrNotSupported (preempt on a backend without
// transfers, holders above 1 on one without several holders),
// ErrForbidden, ErrLimitReached, ErrUnavailable.
func (c *Client) Configure(ctx context.Context, election string, p SettingsPatch) (Election, error) {
	var e Election
	err := c.do(ctx, http.MethodPatch, p, "", &e, "v1", "elections", election)
	return e, err
}

// Leader returns the current leader of election and its term. With
// several holders it is the longest-standing, and its Holders lists every
// holder.
//
// Errors: ErrNoLeader (the *Problem's Ext may hold "handover_until"),
// ErrElectionNotFound, ErrUnavailable.
func (c *Client) Leader(ctx context.Context, election string) (Leader, error) {
	var l Leader
	err := c.doQuery(ctx, http.MethodGet, readQuery(ctx), nil, "", &l, "v1", "elections", election, "leader")
	return l, err
}

// Candidate returns candidate id's status, as a heartbeat would, without
// extending its TTL.
//
// Errors: ErrCandidateNotFound (with ErrCandidacyRevoked when etcd revoked
// it early), ErrElectionNotFound, ErrUnavailable.
func (c *Client) Candidate(ctx context.Context, election, id string) (Status, error) {
	var st Status
	err := c.doQuery(ctx, http.MethodGet, readQuery(ctx), nil, "", &st, "v1", "elections", election, "candidates", id)
	return st, err
}

// Candidates returns the line of election, leader first.
//
// Errors: ErrElectionNotFound, ErrUnavailable.
func (c *Client) Candidates(ctx context.Context, election string) (Candidates, error) {
	var cs Candidates
	err := c.doQuery(ctx, http.MethodGet, readQuery(ctx), nil, "", &cs, "v1", "elections", election, "candidates")
	return cs, err
}

// Election returns election's settings, term and leader.
//
// Errors: ErrElectionNotFound, ErrUnavailable.
func (c *Client) Election(ctx context.Context, election string) (Election, error) {
	var e Election
	err := c.doQuery(ctx, http.MethodGet, readQuery(ctx), nil, "", &e, "v1", "elections", election)
	return e, err
}

// Elections returns every election, sorted by name.
//
// Errors: ErrUnavailable.
func (c *Client) Elections(ctx context.Context) ([]Election, error) {
	var page struct {
		Elections []Election `json:"elections"`
	}
	err := c.doQuery(ctx, http.MethodGet, readQuery(ctx), nil, "", &page, "v1", "elections")
	return page.Elections, err
}

// DeleteElection deletes election once nobody campaigns in it (the API
// token needs the admin scope). A later campaign creates it again, with
// terms above the deleted one's.
//
// Errors: ErrElectionNotFound, ErrElectionNotEmpty while candidates
// remain, ErrUnavailable.
func (c *Client) DeleteElection(ctx context.Context, election string) error {
	return c.do(ctx, http.MethodDelete, nil, "", nil, "v1", "elections", election)
}

// Health is the answer of the probes: Status "ok" (Health) or "ready"
// (Ready), and Ready's Checks by name (backend, watch, webhooks).
type Health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// Health asks the liveness probe, /healthz: whether the gateway process
// serves HTTP at all. It needs no API token.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, nil, "", &h, "healthz")
	return h, err
}

// Ready asks the readiness probe, /readyz: whether this gateway serves
// writes now. It needs no API token.
//
// Errors: ErrUnavailable while it does not, a *Problem whose Ext
// "checks" names each check's state ("backend": "starting" while the
// gateway opens its backend, "unreachable", …).
func (c *Client) Ready(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, nil, "", &h, "readyz")
	return h, err
}
