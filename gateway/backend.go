package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Backend stores elections and makes their transitions. It is the seam that
// backends/memory, backends/nats and backends/etcd implement; the conformance
// suite in gateway/backendtest states its contract as tests.
//
// A Backend must guarantee, for each election:
//   - at most one leader at any time (at most Settings.Holders holders, on a
//     MultiHolder), and terms that strictly increase across successive
//     leaderships (holderships, each unique), whatever the number of
//     gateway replicas;
//   - FIFO order of the line within a priority (higher first), a candidate
//     leaving error cooldown at the back of its priority;
//   - expiry of a candidate that does not heartbeat within its TTL, with the
//     events that follow from it, even when no request arrives;
//   - events delivered by Watch in one total order, with ids that are the
//     same on every replica and can be resumed from.
//
// Arguments are validated by the Gateway before a Backend sees them. All
// methods are safe for concurrent use.
type Backend interface {
	// Campaign puts a new candidate at the back of the line of election,
	// creating the election with settings defaults if it does not exist.
	// It returns ErrCandidateExists if a live candidate has the same id.
	Campaign(ctx context.Context, election string, c Candidacy, defaults Settings) (Status, error)

	// Heartbeat extends the candidate's life by its TTL from now. It returns
	// ErrCandidateNotFound for an unknown or expired candidate and
	// ErrTokenMismatch if tokenHash is not the candidate's.
	Heartbeat(ctx context.Context, election, id, tokenHash string) (Status, error)

	// Resign removes the candidate. A leader that resigns hands over to the
	// next in line at once, without the handover delay. Errors as Heartbeat.
	Resign(ctx context.Context, election, id, tokenHash string) error

	// ReportError puts the candidate in the error state until the election's
	// error cooldown has passed; a leader gives up its leadership and the
	// next in line is promoted at once. Errors as Heartbeat.
	ReportError(ctx context.Context, election, id, tokenHash, reason string) (Status, error)

	// Election returns a snapshot of one election, or ErrElectionNotFound.
	Election(ctx context.Context, election string) (Election, error)

	// Elections returns a snapshot of every election, sorted by name, all
	// taken at one point of the event stream, and the id of the last event
	// reflected in it, from which Watch(ctx, "", cursor) continues without
	// a gap.
	Elections(ctx context.Context) (elections []Election, cursor string, err error)

	// Configure replaces the settings of election, creating it if needed.
	Configure(ctx context.Context, election string, s Settings) (Election, error)

	// Watch streams the events that follow the event with id after, of one
	// election or, with election "", of all. Ids and cursors are in the
	// forms Position describes and order as their Positions do. With after "" it starts with the
	// next event. It returns ErrCursorExpired when after is no longer held
	// (or was never issued by this backend); the caller then takes a snapshot
	// with Election and watches from its Cursor. The channel is closed when
	// ctx ends, when the backend stops, or when the receiver falls too far
	// behind; the receiver resumes with the id of the last event it got.
	Watch(ctx context.Context, election, after string) (<-chan Event, error)
}

// Header is implemented by backends that can tell their latest position
// with one cheap call that reads no election (a stream's last sequence, a
// store's revision). The Gateway's hub starts its one watch from it, and
// backends serving reads from a watch-fed cache use it as a read index:
// a read waits until the cache has caught up with the head fetched after
// the read arrived (see ReadIndex), so it reflects every write
// acknowledged before it.
type Header interface {
	// Head returns the position of the latest event, as a cursor in the
	// form Position describes (the event's id, or "<rev>" where the
	// backend cannot name the event, with no event after it), as of a
	// point after the call began: Watch(ctx, "", head) continues from it
	// without a gap and without the events before it. Not the position of
	// the latest write: a write without events (a change of settings, a
	// KV write) moves that, and a hub, which moves only with the events it
	// receives, would never reach it.
	Head(ctx context.Context) (string, error)
}

// CursorBound is implemented by backends whose snapshot cursors can lie
// past Head: etcd's are store revisions, which writes without events (KV
// writes, timer markers) move, and which must stay that recent to survive
// a compaction. MaxCursor returns the position just after the latest
// write, as of a point after the call began; the hub accepts cursors up to
// it as issued (no event lies between Head and it). Without it, the hub
// accepts cursors up to Head.
type CursorBound interface {
	MaxCursor(ctx context.Context) (string, error)
}

// ElectionCounter is implemented by backends that can count their
// elections without building them. The count may lag other replicas by
// the time a write takes to reach this one: the limits it serves are
// best-effort (see checkCandidateLimit).
type ElectionCounter interface {
	CountElections(ctx context.Context) (int, error)
}

// LeaderReader is implemented by backends that can read an election's
// leadership without building its whole snapshot (every candidate, and
// each one's expiry). Gateway.Leader uses it.
type LeaderReader interface {
	// ElectionLeader returns election's snapshot with Name, Settings,
	// Term, Leader (its ExpiresAt included), HandoverUntil, Transfer and
	// Cursor as Election fills them, and no Candidates (see
	// Record.LeaderSnapshot). It gives the guarantees of Election and
	// fails as it does.
	ElectionLeader(ctx context.Context, election string) (Election, error)
}

// CandidateCounter is implemented by backends that can count an
// election's candidates from what the replica already holds, without a
// round trip. The count may lag other replicas by the time a write takes
// to reach this one; checkCandidateLimit uses it only to let a campaign
// through quickly, never to refuse one.
type CandidateCounter interface {
	// CountCandidates returns the number of candidates of election, in
	// line and in error. Errors: ErrElectionNotFound, ErrUnavailable.
	CountCandidates(ctx context.Context, election string) (int, error)
}

// LeaderFailer is implemented by backends that can put a leader in error
// only while it still leads a given term, in one atomic step. FailBegin
// uses it, so that a late verdict on an old leadership can never end a
// newer one.
type LeaderFailer interface {
	// FailLeader is ReportError conditional on candidate id leading
	// election in term; otherwise it changes nothing and returns
	// ErrNotLeader. Unlike ReportError, the next leadership begins only
	// once the failed leader's promise has lapsed (its step-down deadline:
	// see Record.FailLeader). Errors also as ReportError.
	FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (Status, error)
}

// ElectionDeleter is implemented by backends that can delete an election
// nobody campaigns in any more.
//
// Fencing across a deletion: a backend keeps what it needs for the terms
// of an election created again under the same name to be larger than every
// term the deleted one handed out (a tombstone holding the last term, or
// terms drawn from a store-wide revision), so a resource guarded with an
// old term never accepts an old leader again.
type ElectionDeleter interface {
	// DeleteElection deletes election if it has no candidate (in line or
	// in error cooldown). Errors: ErrElectionNotFound, ErrElectionNotEmpty,
	// ErrUnavailable.
	DeleteElection(ctx context.Context, election string) error
}

// TokenChecker is implemented by backends that can tell whether a token
// is a live candidate's without writing anything.
type TokenChecker interface {
	// CheckToken returns nil when candidate id of election is live and
	// holds tokenHash. Errors: ErrCandidateNotFound, ErrTokenMismatch,
	// ErrUnavailable.
	CheckToken(ctx context.Context, election, id, tokenHash string) error
}

// Runner is implemented by backends that need a background loop (to expire
// candidates, end cooldowns and promote after a handover delay). The Gateway
// runs it; Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Pinger is implemented by backends that can tell whether they are able to
// serve: connected, caught up. The readiness probe calls it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// MultiHolder is implemented by backends whose elections can have more
// than one holder (Settings.Holders above 1): the first N candidates in
// line hold, each holdership with its own term from the election's one
// increasing sequence, and never more than N may act at once under the
// step-down rule (see Record for the argument, which a backend storing
// elections otherwise must make its own). Lowering N ends the newest
// holderships first (reason holders_reduced) and holds their slots until
// their promises lapse; raising it fills the new slots at once; Election,
// Status and LeaderReader fill Holders; a transfer names the holder that
// hands over (HolderTransferer). The conformance suite's holders subtests
// state it as tests.
//
// Without it the Gateway refuses holders above 1, as a setting or as the
// default of new elections, with an *UnsupportedError (the API's 501
// not-supported naming the backend). Such a backend must also refuse
// Configure and Campaign with Settings.Holders above 1 with an
// *UnsupportedError rather than store them as 1.
type MultiHolder interface {
	// MaxHolders is the largest Settings.Holders the backend takes, at
	// most MaxHolders.
	MaxHolders() int
}

// HolderTransferer is implemented by Transferer backends that are
// MultiHolders: a transfer that names the holder asked to hand over.
type HolderTransferer interface {
	// TransferFrom is Transfer with from naming the holder that should
	// hand over ("": as Transfer, which with more than one holder needs
	// tokenHash to be a holder's). Errors as Transfer, and ErrInvalid
	// (more than one holds and nothing names which).
	TransferFrom(ctx context.Context, election, from, to, tokenHash string) (Election, error)
}

// Transferer is implemented by backends that can transfer leadership to a
// named follower and order the line by priority (the Record's Transfer and
// Handover, made atomic as its other transitions are). Without it the
// Gateway refuses transfers, priorities other than 0 and the preempt
// setting with ErrNotSupported.
type Transferer interface {
	// Transfer asks the leader of election to hand over to follower to.
	// With tokenHash "" anybody the caller authorised may ask; otherwise
	// tokenHash must be the leader's. Asking again for the same target
	// changes nothing. Errors: ErrElectionNotFound, ErrNoLeader,
	// ErrNotLeader (tokenHash is not the leader's), ErrNotFollower,
	// ErrTransferPending (to another target), ErrTransferBlocked (the
	// backend cannot reorder the line that far; a *TransferBlockedError).
	Transfer(ctx context.Context, election, to, tokenHash string) (Election, error)

	// Handover ends the leadership of candidate id in favour of the
	// pending transfer's target, which leads at once with the next term;
	// id stays in line as a follower. Errors as Heartbeat, and
	// ErrNoTransfer, ErrNotLeader.
	Handover(ctx context.Context, election, id, tokenHash string) (Status, error)

	// CancelTransfer drops the pending transfer of election while the
	// leadership it asks to hand over is still open; the leader's
	// heartbeats count again. With tokenHash "" anybody the caller
	// authorised may cancel; otherwise tokenHash must be the leader's.
	// It must be one guarded write with every other transition of the
	// election (see Record.CancelTransfer for why). Errors:
	// ErrElectionNotFound, ErrNoTransfer (none pending, or the leadership
	// already ended), ErrNotLeader, ErrPreempting, ErrUnavailable.
	CancelTransfer(ctx context.Context, election, tokenHash string) (Election, error)
}

// Errors returned by backends and by the Gateway. Backends wrap them with
// context (fmt.Errorf("memory: heartbeat %q: %w", id, gateway.ErrCandidateNotFound));
// callers test with errors.Is.
var (
	ErrElectionNotFound  = errors.New("gateway: election not found")
	ErrCandidateNotFound = errors.New("gateway: candidate not found")
	ErrCandidateExists   = errors.New("gateway: candidate already campaigning")
	ErrTokenMismatch     = errors.New("gateway: candidate token does not match")
	ErrNoLeader          = errors.New("gateway: election has no leader")
	ErrNotLeader         = errors.New("gateway: candidate does not lead that term")
	ErrElectionNotEmpty  = errors.New("gateway: election has candidates")
	ErrNotSupported      = errors.New("gateway: not supported by this backend")
	ErrCursorExpired     = errors.New("gateway: event cursor no longer held")
	ErrInvalid           = errors.New("gateway: invalid argument")
	ErrUnavailable       = errors.New("gateway: backend unavailable")
	ErrLimit             = errors.New("gateway: limit reached")
	ErrNotFollower       = errors.New("gateway: candidate is not a follower")
	ErrTransferPending   = errors.New("gateway: leadership transfer pending")
	ErrNoTransfer        = errors.New("gateway: no leadership transfer pending")
	ErrTransferBlocked   = errors.New("gateway: leadership transfer blocked")
	// ErrCandidacyRevoked is an ErrCandidateNotFound that the backend
	// caused: it ended the candidacy while the TTL of a heartbeat it had
	// acknowledged still ran (on etcd, a lease revoked early). A
	// *CandidacyRevokedError says when.
	ErrCandidacyRevoked = errors.New("gateway: candidacy ended early by the backend")
	// ErrPreempting: the pending transfer was started by the election's
	// preempt setting, which would start it again at once; turn preempt
	// off to cancel it.
	ErrPreempting = errors.New("gateway: transfer started by preempt")
)

// CandidacyRevokedError is ErrCandidacyRevoked, and ErrCandidateNotFound
// too: the candidate must campaign again, at the back of the line. At is
// when a gateway saw the backend end the candidacy, ExpiresAt when its
// life should have ended by the heartbeats the backend had acknowledged.
type CandidacyRevokedError struct {
	Election  string
	ID        string
	At        time.Time
	ExpiresAt time.Time
}

func (e *CandidacyRevokedError) Error() string {
	return fmt.Sprintf("gateway: %q: candidacy of %q ended by the backend at %s, before its TTL ran out at %s",
		e.Election, e.ID, e.At.UTC().Format(time.RFC3339Nano), e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// Is makes a CandidacyRevokedError match ErrCandidacyRevoked and
// ErrCandidateNotFound.
func (e *CandidacyRevokedError) Is(target error) bool {
	return target == ErrCandidacyRevoked || target == ErrCandidateNotFound
}

// TransferBlockedError is ErrTransferBlocked: a transfer (or a handover)
// the backend cannot make because of the line it would have to change,
// such as a native etcd client's key ahead of the target, which elector
// cannot move. Reason says what stands in the way.
type TransferBlockedError struct {
	Election string
	To       string
	Reason   string
}

func (e *TransferBlockedError) Error() string {
	return fmt.Sprintf("gateway: %q: leadership transfer to %q blocked: %s", e.Election, e.To, e.Reason)
}

// Is makes a TransferBlockedError match ErrTransferBlocked.
func (e *TransferBlockedError) Is(target error) bool { return target == ErrTransferBlocked }

// TransferPendingError is ErrTransferPending with the pending transfer: a
// leader's heartbeat refused while it should hand over, or a request for a
// second transfer.
type TransferPendingError struct {
	Election string
	Transfer Transfer
}

func (e *TransferPendingError) Error() string {
	return fmt.Sprintf("gateway: %q: leadership transfer to %q pending (%s)", e.Election, e.Transfer.To, e.Transfer.Reason)
}

// Is makes a TransferPendingError match ErrTransferPending.
func (e *TransferPendingError) Is(target error) bool { return target == ErrTransferPending }

// UnsupportedError is ErrNotSupported naming the backend and the ability
// it lacks.
type UnsupportedError struct {
	Backend string // the backend's package name: "nats", "etcd"
	Ability string // "leadership transfer", "priorities", "preempt", "more than one holder"
}

// Supported names the backends of elector that have e's ability, for a
// message that says what to use instead.
func (e *UnsupportedError) Supported() string {
	if strings.Contains(e.Ability, "holder") {
		return "embedded, nats, etcd, memory"
	}
	return "memory, nats, etcd"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("gateway: the %s backend does not support %s", e.Backend, e.Ability)
}

// Is makes an UnsupportedError match ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }
