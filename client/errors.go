package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ProblemTypePrefix starts the type of every problem the gateway answers
// with; the slug after it names the error.
const ProblemTypePrefix = "urn:elector:problem:"

// Sentinels for the gateway's problem types; a *Problem matches the one of
// its type with errors.Is.
var (
	ErrInvalidRequest        = errors.New("elector: invalid request")             // invalid-request, malformed-json, …
	ErrCandidateTokenMissing = errors.New("elector: candidate token missing")     // candidate-token-missing
	ErrTokenMismatch         = errors.New("elector: candidate token mismatch")    // candidate-token-mismatch
	ErrElectionNotFound      = errors.New("elector: election not found")          // election-not-found
	ErrCandidateNotFound     = errors.New("elector: candidate not found")         // candidate-not-found: campaign again
	ErrNoLeader              = errors.New("elector: no leader")                   // no-leader
	ErrNotFound              = errors.New("elector: not found")                   // not-found (no such route)
	ErrCandidateExists       = errors.New("elector: candidate already campaigns") // candidate-exists
	ErrLimitReached          = errors.New("elector: limit reached")               // limit-reached
	ErrRateLimited           = errors.New("elector: rate limited")                // rate-limited: slow down
	ErrUnauthenticated       = errors.New("elector: unauthenticated")             // unauthenticated: see WithAPIToken
	ErrForbidden             = errors.New("elector: forbidden")                   // forbidden: the API token lacks the scope
	ErrUnavailable           = errors.New("elector: backend unavailable")         // backend-unavailable, election-contended, 5xx without a problem
	ErrInternal              = errors.New("elector: internal error")              // internal
	// ErrTransferPending: a leader's heartbeat is refused because it is
	// asked to hand over (the *Problem's Ext holds "transfer"); it must
	// stop acting as leader and call Handover. Also a second transfer.
	ErrTransferPending = errors.New("elector: leadership transfer pending")  // transfer-pending
	ErrNotFollower     = errors.New("elector: not a follower")               // not-a-follower
	ErrNotLeader       = errors.New("elector: not the leader")               // not-leader
	ErrNoTransfer      = errors.New("elector: no transfer pending")          // no-transfer-pending
	ErrNotSupported    = errors.New("elector: not supported by the backend") // not-supported

	// ErrTransferBlocked: the backend cannot reorder the line for that
	// transfer (on etcd, a native client's key stands between the leader
	// and the target); the *Problem's Detail names it.
	ErrTransferBlocked = errors.New("elector: leadership transfer blocked") // transfer-blocked

	// ErrCandidacyRevoked: a candidate-not-found whose problem has
	// "revoked": the backend ended the candidacy before the TTL of its
	// last acknowledged heartbeat ran out (on etcd, a lease revoked
	// early), not because it was late. It matches ErrCandidateNotFound
	// too: campaign again.
	ErrCandidacyRevoked = errors.New("elector: candidacy ended early by the backend")
	// ErrPreemptOn: the transfer to cancel was started by the election's
	// preempt setting, which would start it again; turn preempt off first.
	ErrPreemptOn = errors.New("elector: transfer started by preempt") // preempt-on

	ErrRequestTimeout      = errors.New("elector: request body timed out")     // request-timeout: the body did not arrive in time
	ErrMethodNotAllowed    = errors.New("elector: method not allowed")         // method-not-allowed
	ErrElectionNotEmpty    = errors.New("elector: election not empty")         // election-not-empty: candidates remain
	ErrWebhookNotFound     = errors.New("elector: webhook not found")          // webhook-not-found: no such subscription, or no webhook
	ErrDeliveryNotFound    = errors.New("elector: delivery not found")         // delivery-not-found
	ErrNotRedeliverable    = errors.New("elector: delivery not redeliverable") // not-redeliverable: a gap
	ErrWebhooksUnavailable = errors.New("elector: webhooks unavailable")       // webhooks-unavailable: the backend keeps no outbox
	// ErrDestinationRefused: a webhook URL that is not http(s), or on a
	// loopback, private, link-local or other non-public network while the
	// gateway does not allow them (webhooks.allow_private_networks).
	ErrDestinationRefused = errors.New("elector: webhook destination refused") // webhook-destination-refused

	ErrSessionTokenMissing  = errors.New("elector: session token missing")  // session-token-missing: no SessionTokenHeader
	ErrSessionTokenMismatch = errors.New("elector: session token mismatch") // session-token-mismatch: not this session's token
	// ErrSessionNotFound: the session is unknown, closed, or expired (its
	// heartbeats stopped for its TTL), and its candidacies with it: open
	// another and campaign again.
	ErrSessionNotFound = errors.New("elector: session not found") // session-not-found
	// ErrSessionInElection: the session already has a candidacy in the
	// election; a session campaigns once per election.
	ErrSessionInElection = errors.New("elector: session already in the election") // session-in-election
)

// problemSentinels maps problem slugs to sentinels.
var problemSentinels = map[string]error{
	"invalid-request":             ErrInvalidRequest,
	"malformed-json":              ErrInvalidRequest,
	"body-too-large":              ErrInvalidRequest,
	"unsupported-media-type":      ErrInvalidRequest,
	"candidate-token-missing":     ErrCandidateTokenMissing,
	"candidate-token-mismatch":    ErrTokenMismatch,
	"session-token-missing":       ErrSessionTokenMissing,
	"session-token-mismatch":      ErrSessionTokenMismatch,
	"session-not-found":           ErrSessionNotFound,
	"session-in-election":         ErrSessionInElection,
	"election-not-found":          ErrElectionNotFound,
	"candidate-not-found":         ErrCandidateNotFound,
	"no-leader":                   ErrNoLeader,
	"not-found":                   ErrNotFound,
	"candidate-exists":            ErrCandidateExists,
	"limit-reached":               ErrLimitReached,
	"rate-limited":                ErrRateLimited,
	"unauthenticated":             ErrUnauthenticated,
	"forbidden":                   ErrForbidden,
	"backend-unavailable":         ErrUnavailable,
	"election-contended":          ErrUnavailable,
	"internal":                    ErrInternal,
	"transfer-pending":            ErrTransferPending,
	"not-a-follower":              ErrNotFollower,
	"not-leader":                  ErrNotLeader,
	"no-transfer-pending":         ErrNoTransfer,
	"transfer-blocked":            ErrTransferBlocked,
	"preempt-on":                  ErrPreemptOn,
	"not-supported":               ErrNotSupported,
	"malformed-body":              ErrInvalidRequest,
	"request-timeout":             ErrRequestTimeout,
	"method-not-allowed":          ErrMethodNotAllowed,
	"election-not-empty":          ErrElectionNotEmpty,
	"webhook-destination-refused": ErrDestinationRefused,
	"webhook-not-found":           ErrWebhookNotFound,
	"delivery-not-found":          ErrDeliveryNotFound,
	"not-redeliverable":           ErrNotRedeliverable,
	"webhooks-unavailable":        ErrWebhooksUnavailable,
}

// Problem is an RFC 9457 problem document the gateway answered with, or,
// for an answer that was not one (a proxy's error page), a Problem with an
// empty Type made from the status.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`
	// Ext holds the extension members, such as "field" or
	// "handover_until".
	Ext map[string]json.RawMessage `json:"-"`
	// RetryAfter is the wait the answer's Retry-After header asked for
	// (429 and 503 answers carry one), or 0.
	RetryAfter time.Duration `json:"-"`
}

// Slug is the part of Type after ProblemTypePrefix ("candidate-not-found"),
// or "" for a problem of another kind.
func (p *Problem) Slug() string {
	s, ok := strings.CutPrefix(p.Type, ProblemTypePrefix)
	if !ok {
		return ""
	}
	return s
}

// Error reads "elector: <title> (<status>): <detail>".
func (p *Problem) Error() string {
	title := p.Title
	if title == "" {
		title = http.StatusText(p.Status)
	}
	if p.Detail == "" {
		return fmt.Sprintf("elector: %s (%d)", title, p.Status)
	}
	return fmt.Sprintf("elector: %s (%d): %s", title, p.Status, p.Detail)
}

// Is matches the sentinel of the problem's type (a candidate-not-found
// with "revoked" also ErrCandidacyRevoked); a 5xx answer that is not a
// problem document matches ErrUnavailable.
func (p *Problem) Is(target error) bool {
	if target == ErrCandidacyRevoked {
		_, revoked := p.Ext["revoked"]
		return revoked && p.Slug() == "candidate-not-found"
	}
	if s, ok := problemSentinels[p.Slug()]; ok {
		return s == target
	}
	return p.Type == "" && p.Status >= 500 && target == ErrUnavailable
}

// readProblem turns a non-2xx answer into a *Problem.
func readProblem(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	p := &Problem{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/problem+json") || strings.HasPrefix(ct, "application/json") {
		var members map[string]json.RawMessage
		if json.Unmarshal(body, &members) == nil {
			_ = json.Unmarshal(body, p)
			for _, k := range []string{"type", "title", "status", "detail", "instance"} {
				delete(members, k)
			}
			if len(members) > 0 {
				p.Ext = members
			}
			if p.Status == 0 {
				p.Status = resp.StatusCode
			}
			return p
		}
	}
	p.Title = http.StatusText(resp.StatusCode)
	p.Detail = strings.TrimSpace(string(body))
	if len(p.Detail) > 200 {
		p.Detail = p.Detail[:200] + "…"
	}
	return p
}

// parseRetryAfter reads a Retry-After header, delay-seconds or an
// HTTP-date (RFC 9110, section 10.2.3), as a wait from now; 0 when absent,
// malformed or past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
