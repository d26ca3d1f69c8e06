package gateway

import (
	"encoding/json"
	"time"
)

// State is where a candidate stands in its election.
type State string

// The states of a candidate. A candidate that resigned or expired is gone
// and has no state.
const (
	StateFollower State = "follower" // in line, waiting its turn
	StateLeader   State = "leader"   // at the head of the line, holding a term
	StateError    State = "error"    // out of line until its cooldown ends
)

// Candidacy is what a candidate asks for when it campaigns.
type Candidacy struct {
	ID        string          // validated by ValidateCandidateID
	Metadata  json.RawMessage // a compact JSON object, or nil
	TTL       time.Duration   // within the Gateway's bounds
	TokenHash string          // HashToken of the token returned to the caller
	// Priority orders the line: higher first, then by arrival. Default 0.
	// Only a Transferer backend takes a priority other than 0.
	Priority int
}

// Candidate is one candidate of an election as a backend reports it.
type Candidate struct {
	ID            string
	Metadata      json.RawMessage // nil when the candidate gave none
	TTL           time.Duration
	Priority      int
	State         State
	Term          uint64    // the candidate's term while State is StateLeader, else 0
	JoinedAt      time.Time // when it last joined the line
	ExpiresAt     time.Time // when it expires unless it heartbeats
	CooldownUntil time.Time // when it rejoins the line; set only in StateError
}

// Leader is the current leader of an election and its fencing term.
type Leader struct {
	ID        string
	Metadata  json.RawMessage
	Term      uint64
	Since     time.Time
	ExpiresAt time.Time
}

// Settings are the per-election knobs. Zero values are valid: no cooldown,
// no handover delay.
type Settings struct {
	// ErrorCooldown is how long a candidate stays in StateError before it
	// rejoins the back of the line. Default DefaultErrorCooldown.
	ErrorCooldown time.Duration
	// HandoverDelay holds back the promotion of the next leader after a
	// leader expires (not after it resigns or errors). Default 0.
	HandoverDelay time.Duration
	// Preempt lets a follower with a higher priority than the leader's
	// take over through a transfer (reason preempted). Without it,
	// priority only orders the followers. Default false; only a
	// Transferer backend takes it.
	Preempt bool `json:"preempt,omitempty"`
}

// Transfer is a pending transfer of leadership to a named follower. While
// it is pending the leader's heartbeats are refused (ErrTransferPending),
// so its life runs out unless it hands over first; see Record.
type Transfer struct {
	To     string    `json:"to"`
	Reason string    `json:"reason"` // ReasonTransferred or ReasonPreempted
	At     time.Time `json:"at"`     // when it was requested
}

// DefaultErrorCooldown is the error cooldown of an election created without
// other settings.
const DefaultErrorCooldown = 10 * time.Second

// DefaultSettings are the settings a Gateway gives new elections unless
// configured otherwise.
func DefaultSettings() Settings {
	return Settings{ErrorCooldown: DefaultErrorCooldown}
}

// Election is a snapshot of one election.
type Election struct {
	Name     string
	Settings Settings
	// Term is the current leader's term or, with no leader, the last term
	// handed out (0 if there was never a leader).
	Term   uint64
	Leader *Leader // nil when the election has no leader
	// HandoverUntil is set while a promotion is held back by the handover
	// delay or by the promise of a leader that ended without saying it had
	// stopped (a failed leader's, see Record.FailLeader; on etcd also an
	// expired one's); Leader is nil until then.
	HandoverUntil time.Time
	// Transfer is the pending leadership transfer, or nil.
	Transfer *Transfer
	// Candidates in line order: the leader, the followers by priority
	// (higher first) and then first come first,
	// then the candidates in error by the end of their cooldown.
	Candidates []Candidate
	// Cursor is the id of the last event reflected in this snapshot;
	// Watch(ctx, name, Cursor) continues from it without a gap.
	Cursor string
}

// Status is what a candidate learns when it campaigns, heartbeats or
// reports an error: its own record, its place in line and the leader.
type Status struct {
	Election  string
	Candidate Candidate
	// Position is the number of candidates ahead of it in line: 0 for the
	// leader (or, during a handover delay, the next leader), -1 while the
	// candidate is in error.
	Position int
	Term     uint64  // as Election.Term
	Leader   *Leader // nil when the election has no leader
	// Transfer is the election's pending leadership transfer, or nil.
	Transfer *Transfer
}

// StatusOf derives a candidate's Status from a snapshot of its election.
// ok is false when the snapshot has no candidate with that id.
func StatusOf(e Election, id string) (s Status, ok bool) {
	pos := 0
	for _, c := range e.Candidates {
		if c.ID == id {
			p := pos
			if c.State == StateError {
				p = -1
			}
			return Status{Election: e.Name, Candidate: c, Position: p, Term: e.Term, Leader: e.Leader, Transfer: e.Transfer}, true
		}
		if c.State != StateError {
			pos++
		}
	}
	return Status{}, false
}
