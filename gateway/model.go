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
	StateLeader   State = "leader"   // one of the first Settings.Holders in line, holding a term
	StateError    State = "error"    // out of line until its cooldown ends
)

// Candidacy is what a candidate asks for when it campaigns.
type Candidacy struct {
	ID        string          // validated by ValidateCandidateID
	Metadata  json.RawMessage // a compact JSON object, or nil
	TTL       time.Duration   // within the Gateway's bounds
	TokenHash string          // HashToken of the token returned to the caller
	// Priority orders the line: higher first, then by arrival. Default 0.
	Priority int
	// Session is the session the candidacy campaigns in (see Sessioner),
	// or "". Only a Sessioner's Campaign is given one; TTL is then 0, the
	// session's.
	Session string
}

// Candidate is one candidate of an election as a backend reports it.
type Candidate struct {
	ID            string
	Metadata      json.RawMessage // nil when the candidate gave none
	TTL           time.Duration
	Priority      int
	State         State
	Term          uint64    // the candidate's own term while State is StateLeader, else 0
	JoinedAt      time.Time // when it last joined the line
	ExpiresAt     time.Time // when it expires unless it heartbeats
	CooldownUntil time.Time // when it rejoins the line; set only in StateError
}

// Leader is a holder of an election (with one holder: its leader) and the
// fencing term of its holdership.
type Leader struct {
	ID        string
	Metadata  json.RawMessage
	Term      uint64
	Since     time.Time
	ExpiresAt time.Time
}

// Settings are the per-election knobs. Zero values are valid: no cooldown,
// no handover delay, one holder.
type Settings struct {
	// ErrorCooldown is how long a candidate stays in StateError before it
	// rejoins the back of the line. Default DefaultErrorCooldown.
	ErrorCooldown time.Duration
	// HandoverDelay holds back the promotion of the next leader after a
	// leader expires (not after it resigns or errors). Default 0.
	HandoverDelay time.Duration
	// Preempt lets a follower with a higher priority than the leader's
	// take over through a transfer (reason preempted). Without it,
	// priority only orders the followers. Default false.
	Preempt bool `json:"preempt,omitempty"`
	// Holders is how many candidates hold the election at once: the
	// first Holders in line (a semaphore), each holdership with a term
	// of its own from the election's one increasing sequence. 0 means 1,
	// the default; at most MaxHolders, and at most what the backend
	// takes (MultiHolder).
	Holders int `json:"holders,omitempty"`
}

// MaxHolders bounds Settings.Holders. Every transition rewrites an
// election's record whole, and every heartbeat answer and read of the
// leader lists every holder, with its metadata: 64 keeps both within tens
// of kilobytes at the default metadata bound, and each holdership that
// ends on the gateway's verdict keeps a timer (a marker on NATS) until its
// promise lapses. A semaphore wider than that is better split into
// several elections.
const MaxHolders = 64

// HolderLimit is s.Holders, with 0 read as the default, 1.
func (s Settings) HolderLimit() int {
	if s.Holders < 1 {
		return 1
	}
	return s.Holders
}

// Transfer is a pending transfer of a holdership to a named follower.
// While it is pending the heartbeats of the holder asked to hand over are
// refused (ErrTransferPending), so its life runs out unless it hands over
// first; see Record.
type Transfer struct {
	To     string    `json:"to"`
	Reason string    `json:"reason"` // ReasonTransferred or ReasonPreempted
	At     time.Time `json:"at"`     // when it was requested
	// From and Term are the holder asked to hand over and its
	// holdership's term (with one holder: the leader).
	From string `json:"from,omitempty"`
	Term uint64 `json:"term,omitempty"`
}

// DefaultErrorCooldown is the error cooldown of an election created without
// other settings.
const DefaultErrorCooldown = 10 * time.Second

// DefaultSettings are the settings a Gateway gives new elections unless
// configured otherwise. The etcd backend stores none for an election
// created on them and reads an election without stored settings as these,
// so they are part of what it has stored: changing them changes such
// elections.
func DefaultSettings() Settings {
	return Settings{ErrorCooldown: DefaultErrorCooldown}
}

// Election is a snapshot of one election.
type Election struct {
	Name     string
	Settings Settings
	// Term is the last term handed out (0 if there was never a leader):
	// with one holder, the current leader's, or the last leader's.
	Term uint64
	// Leader is the longest-standing holder (with one holder: the
	// leader), nil when nobody holds.
	Leader *Leader
	// Holders are every holder, the longest-standing first, when the
	// election's Settings.Holders is above 1; nil with one holder (Leader
	// is then the only one).
	Holders []Leader
	// HandoverUntil is set while a promotion is held back by a handover
	// delay or by the promise of a holder that ended without saying it had
	// stopped (a failed leader's or one ended by lowering the holders, see
	// Record.FailLeader and Record.Configure; on etcd also an expired
	// one's): when the next slot may be filled. With one holder, Leader is
	// nil until then.
	HandoverUntil time.Time
	// Transfer is the pending leadership transfer, or nil.
	Transfer *Transfer
	// Candidates in line order: the holders (the longest-standing
	// first), the followers by priority (higher first) and then first
	// come first, then the candidates in error by the end of their
	// cooldown.
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
	// candidate is in error. The holders are at 0 to Holders-1, the
	// longest-standing first; a follower at p waits for p-N+1 slots to
	// free, with N holders.
	Position int
	// Term is the candidate's own term while it holds (its fencing
	// token), else Election.Term.
	Term    uint64
	Leader  *Leader  // as Election.Leader
	Holders []Leader // as Election.Holders
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
			term := e.Term
			if c.State == StateLeader {
				term = c.Term
			}
			return Status{Election: e.Name, Candidate: c, Position: p, Term: term, Leader: e.Leader, Holders: e.Holders, Transfer: e.Transfer}, true
		}
		if c.State != StateError {
			pos++
		}
	}
	return Status{}, false
}
