// Package gateway is the core of elector: the election model, the Backend
// seam that coordination engines implement, and the Gateway service that the
// HTTP API calls.
//
// The model. An election is a name. Candidates campaign into it and wait in
// line in the order they campaigned (FIFO). The head of the line is the
// leader (the first N, with N holders: see Holders); every leadership carries a term, a fencing token that strictly
// increases across the successive leaderships of one election. A candidate
// stays in the election while it heartbeats within its TTL. A candidate that
// reports an error (a failed begin handler) leaves the line for the
// election's error cooldown and then rejoins at the back. When a leader
// expires (as opposed to resigning) an optional handover delay passes before
// the next leader is promoted, so that a partitioned old leader has time to
// notice and stand down.
//
// Holders. An election's holders setting N (Settings.Holders, default 1,
// at most MaxHolders) makes it a semaphore: the first N candidates in
// line hold at once, each holdership with its own term from the
// election's one increasing sequence, so fencing works per holder. Every
// holder is told "leader"; reads name the longest-standing holder as the
// leader and list all of them (Election.Holders). Never more than N may
// act at once under the step-down rule: a slot is filled only while fewer
// than N holders may still act, counting those ended without their word
// until their promise lapses (see Record). Lowering N ends the newest
// holderships (reason holders_reduced) and holds their slots until their
// promises lapse; raising it fills the new slots at once. A backend says
// how many it takes (MultiHolder: every backend of elector takes
// MaxHolders); the Gateway refuses more (ErrNotSupported). With N = 1
// everything here reads as for one leader.
//
// The promise. A heartbeat answered "leader" lets the leader act until a TTL
// after it sent it (the step-down rule), and no other leadership begins
// before that. A leadership that ends on the leader's own word (resign,
// error report, handover) or by its expiry keeps it by construction. One
// that the gateway ends by its verdict (FailBegin: the begin webhook went
// unacknowledged) does not, as the leader may not have heard: the next
// leadership is held back until the failed leader's promise has lapsed
// (Record.FailLeader; on etcd the leader's promise record, see
// backends/etcd). Reads meanwhile show no leader and HandoverUntil. With
// N holders the same holds per slot: the failed holder's slot waits, the
// others are unaffected.
//
// Transfers and priorities. A candidate may
// campaign with a priority: the followers are ordered by priority, then by
// arrival, and the holders keep their places. A transfer names the
// follower that should lead next (and, with several holders, the holder it
// replaces); that holder's heartbeats are refused until it hands over or
// expires, so the target never holds while the old holder may still act
// (see Record.Transfer). A pending transfer can be cancelled while its
// holdership is open, which changes no holdership (Record.CancelTransfer).
// With the election's preempt setting, a follower of higher priority than
// the leader (the lowest-priority holder) starts such a transfer.
//
// The contract. Backend is composed of roles, each a named interface that
// every backend (memory, nats, etcd) implements and the Gateway calls
// without asking:
//
//	Backend
//	├── Campaigner       Campaign, Heartbeat, Resign, ReportError
//	├── Reader           Election, Elections, Watch
//	├── Configurer       Configure
//	├── Runner           Run: expiry, cooldowns, handover delays
//	├── Header           Head: the hub's start, the read index
//	├── ElectionCounter  CountElections: the MaxElections check
//	├── LeaderFailer     FailLeader: a failed begin, one guarded step
//	├── ElectionDeleter  DeleteElection, with fencing across it
//	├── TokenChecker     CheckToken, without a write
//	├── Transferer       Transfer, TransferFrom, Handover, CancelTransfer
//	├── MultiHolder      MaxHolders
//	├── Pinger           Ping: readiness
//	├── CatchUpReporter  CaughtUp: readiness
//	└── KV               Get, Create, Update, Delete, List: the webhook outbox
//
// Outside the contract are three optional hints, found by type assertion,
// each of which a backend may leave out and still be served correctly:
// LeaderReader (a leader read without the whole snapshot) and
// CandidateCounter (a limit check without a round trip) only make a read
// cheaper; CursorBound matters only where snapshot cursors can lie past
// Head (etcd's store revisions). Observe wraps a Backend in a decorator
// that reports every call to an Observer (package metrics times them;
// the Gateway follows its own writes with one for readiness) and keeps
// exactly the hints of the backend it wraps, so a Gateway over it takes
// the same paths.
//
// Who decides. A Backend owns all election state and makes every transition
// atomically; the Gateway validates input, issues candidate tokens, and never
// decides leadership itself. Because the promotion of a leader is a single
// atomic write in the backend (a mutex in backends/memory, a compare-and-set
// or transaction in the networked backends), two gateway replicas can never
// promote two leaders (or one holder more than the setting): the second
// writer's precondition fails.
//
// Events. Each replica holds one watch of its backend for all elections
// (the hub, run by Gateway.Run) and fans it out to every subscriber of that
// replica: SSE streams, webhook workers, metrics. The hub keeps the last
// events in a bounded ring, so a subscriber resuming with a recent
// Last-Event-ID costs the backend nothing; an older cursor is served by a
// backend watch until it reaches the ring, which is then released. A
// subscriber that reads too slowly is cut off and resumes. Event ids and
// cursors order as Positions on every backend, which is what lets the hub
// tell where a cursor stands.
//
// Reads. Backends that keep a watch-fed copy of the elections serve reads
// from it after a read index (Header, ReadIndex): the backend's latest
// revision, fetched after the read arrived and shared by concurrent reads,
// must be reached first, so a read never misses an acknowledged write. A
// read whose context carries WithLocalRead (the API's consistency=local)
// may skip the read index and answer from the copy as it is, while the
// copy follows the backend.
//
// Every Backend passes the conformance suite in gateway/backendtest.
package gateway
