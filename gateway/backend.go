package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backend stores elections and makes their transitions. It is the seam that
// backends/memory, backends/nats and backends/etcd implement; the conformance
// suite in gateway/backendtest states its contract as tests.
//
// Backend is composed of roles, each a named interface: every backend
// implements every role, and the Gateway calls each of them without a type
// assertion. A few hints outside the contract (LeaderReader,
// CandidateCounter, CursorBound) are optional: a backend that has them is
// asked through them, one without them is served as well by the contract
// (see each for why it stays optional). A decorator of a Backend (Observe)
// keeps whichever hints the backend it wraps has.
//
// A Backend must guarantee, for each election:
//   - at most one leader at any time (at most Settings.Holders holders, up
//     to MaxHolders), and terms that strictly increase across successive
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
	Campaigner      // a candidate's own calls: campaign, heartbeat, resign, error
	Reader          // snapshots and the event stream
	Configurer      // an election's settings
	Runner          // the background loop: expiry, cooldowns, handover delays
	Header          // the head of the event stream, a read index
	ElectionCounter // the number of elections, for MaxElections
	LeaderFailer    // a failed begin handler, as one guarded step
	ElectionDeleter // deleting an election nobody campaigns in
	TokenChecker    // a token checked without a write
	Transferer      // leadership transfers and priorities
	MultiHolder     // how many may hold an election at once
	Pinger          // readiness: can the backend serve?
	CatchUpReporter // readiness: has the replica's copy caught up?
	KV              // the webhook outbox's store
}

// Campaigner is the role of a Backend that serves a candidate's own calls.
type Campaigner interface {
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
}

// Reader is the role of a Backend that reads elections and follows their
// events.
type Reader interface {
	// Election returns a snapshot of one election, or ErrElectionNotFound.
	Election(ctx context.Context, election string) (Election, error)

	// Elections returns a snapshot of every election, sorted by name, all
	// taken at one point of the event stream, and the id of the last event
	// reflected in it, from which Watch(ctx, "", cursor) continues without
	// a gap.
	Elections(ctx context.Context) (elections []Election, cursor string, err error)

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

// Configurer is the role of a Backend that keeps an election's settings.
type Configurer interface {
	// Configure replaces the settings of election, creating it if needed.
	// Settings.Holders above MaxHolders are refused with an
	// *UnsupportedError (the Gateway checks first).
	Configure(ctx context.Context, election string, s Settings) (Election, error)
}

// Header is the role of a Backend that tells its latest position with one
// cheap call that reads no election (a stream's last sequence, a store's
// revision). The Gateway's hub starts its one watch from it, and backends
// serving reads from a watch-fed cache use it as a read index: a read
// waits until the cache has caught up with the head fetched after the read
// arrived (see ReadIndex), so it reflects every write acknowledged before
// it.
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

// CursorBound is an optional hint of a Backend whose snapshot cursors can
// lie past Head: etcd's are store revisions, which writes without events
// (KV writes, timer markers) move, and which must stay that recent to
// survive a compaction. MaxCursor returns the position just after the
// latest write, as of a point after the call began; the hub accepts
// cursors up to it as issued (no event lies between Head and it).
//
// It stays optional because only such backends need it: where every
// cursor is an event's position (memory, nats), Head is the bound, and
// the hub accepts cursors up to Head.
type CursorBound interface {
	MaxCursor(ctx context.Context) (string, error)
}

// ElectionCounter is the role of a Backend that counts its elections
// without building them, so that the MaxElections check costs a campaign
// the same with ten elections as with ten thousand. The count may lag
// other replicas by the time a write takes to reach this one: the limits
// it serves are best-effort (see checkCandidateLimit).
type ElectionCounter interface {
	CountElections(ctx context.Context) (int, error)
}

// LeaderReader is an optional performance hint of a Backend that can read
// an election's leadership without building its whole snapshot (every
// candidate, and each one's expiry). Gateway.Leader uses it.
//
// It stays optional because Election answers the same question with more
// in it: a backend without it (memory, whose snapshot is a copy under a
// lock) serves Leader from Election, correctly, at the cost of the copy.
type LeaderReader interface {
	// ElectionLeader returns election's snapshot with Name, Settings,
	// Term, Leader (its ExpiresAt included), HandoverUntil, Transfer and
	// Cursor as Election fills them, and no Candidates (see
	// Record.LeaderSnapshot). It gives the guarantees of Election and
	// fails as it does.
	ElectionLeader(ctx context.Context, election string) (Election, error)
}

// CandidateCounter is an optional performance hint of a Backend that can
// count an election's candidates from what the replica already holds,
// without a round trip. The count may lag other replicas by the time a
// write takes to reach this one; checkCandidateLimit uses it only to let a
// campaign through quickly, never to refuse one.
//
// It stays optional because the limit check is decided on Election
// without it: a backend whose reads cost no round trip (memory) gains
// nothing from it.
type CandidateCounter interface {
	// CountCandidates returns the number of candidates of election, in
	// line and in error. Errors: ErrElectionNotFound, ErrUnavailable.
	CountCandidates(ctx context.Context, election string) (int, error)
}

// LeaderFailer is the role of a Backend that puts a leader in error only
// while it still leads a given term, in one atomic step. FailBegin uses
// it, so that a late verdict on an old leadership can never end a newer
// one.
type LeaderFailer interface {
	// FailLeader is ReportError conditional on candidate id leading
	// election in term; otherwise it changes nothing and returns
	// ErrNotLeader. Unlike ReportError, the next leadership begins only
	// once the failed leader's promise has lapsed (its step-down deadline:
	// see Record.FailLeader). Errors also as ReportError.
	FailLeader(ctx context.Context, election, id, tokenHash string, term uint64, reason string) (Status, error)
}

// ElectionDeleter is the role of a Backend that deletes an election nobody
// campaigns in any more.
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

// TokenChecker is the role of a Backend that tells whether a token is a
// live candidate's without writing anything.
type TokenChecker interface {
	// CheckToken returns nil when candidate id of election is live and
	// holds tokenHash. Errors: ErrCandidateNotFound, ErrTokenMismatch,
	// ErrUnavailable.
	CheckToken(ctx context.Context, election, id, tokenHash string) error
}

// Runner is the role of a Backend's background loop (to expire
// candidates, end cooldowns and promote after a handover delay). The
// Gateway runs it; Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Pinger is the role of a Backend that tells whether it is able to serve:
// connected, its streams or members answering. The readiness probe calls
// it; a backend in the process (memory) has nothing to lose and answers
// nil.
type Pinger interface {
	Ping(ctx context.Context) error
}

// MultiHolder is the role of a Backend that states how many candidates
// may hold one of its elections at once (Settings.Holders). With more
// than one, the first N candidates in line hold, each holdership with its
// own term from the election's one increasing sequence, and never more
// than N may act at once under the step-down rule (see Record for the
// argument, which a backend storing elections otherwise must make its
// own). Lowering N ends the newest holderships first (reason
// holders_reduced) and holds their slots until their promises lapse;
// raising it fills the new slots at once; Election, Status and
// LeaderReader fill Holders; a transfer may name the holder that hands
// over (Transferer.TransferFrom). The conformance suite's holders
// subtests state it as tests.
//
// A backend that stores one holder per election answers 1. The Gateway
// then refuses holders above 1, as a setting or as the default of new
// elections, with an *UnsupportedError (the API's 501 not-supported
// naming the backend), and the backend must also refuse Configure and
// Campaign with Settings.Holders above 1 with an *UnsupportedError rather
// than store them as 1.
type MultiHolder interface {
	// MaxHolders is the largest Settings.Holders the backend takes, from
	// 1 to MaxHolders.
	MaxHolders() int
}

// Transferer is the role of a Backend that transfers leadership to a named
// follower and orders the line by priority (the Record's Transfer and
// Handover, made atomic as its other transitions are).
type Transferer interface {
	// Transfer asks the leader of election to hand over to follower to.
	// With tokenHash "" anybody the caller authorised may ask; otherwise
	// tokenHash must be the leader's. Asking again for the same target
	// changes nothing. Errors: ErrElectionNotFound, ErrNoLeader,
	// ErrNotLeader (tokenHash is not the leader's), ErrNotFollower,
	// ErrTransferPending (to another target), ErrTransferBlocked (the
	// backend cannot reorder the line that far; a *TransferBlockedError).
	Transfer(ctx context.Context, election, to, tokenHash string) (Election, error)

	// TransferFrom is Transfer with from naming the holder that should
	// hand over ("": as Transfer, which with more than one holder needs
	// tokenHash to be a holder's). Errors as Transfer, and ErrInvalid
	// (more than one holds and nothing names which).
	TransferFrom(ctx context.Context, election, from, to, tokenHash string) (Election, error)

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
// it lacks: more holders than its MaxHolders.
type UnsupportedError struct {
	Backend string // the backend's package name: "nats", "etcd"
	Ability string // "more than one holder", "more than 8 holders"
}

// Supported names the backends of elector that have e's ability, for a
// message that says what to use instead.
func (e *UnsupportedError) Supported() string { return "embedded, nats, etcd, memory" }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("gateway: the %s backend does not support %s", e.Backend, e.Ability)
}

// Is makes an UnsupportedError match ErrNotSupported.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }
