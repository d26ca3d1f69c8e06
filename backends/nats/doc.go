// Package nats is the elector backend over NATS JetStream, and the embedded
// default: `elector serve` with no backend configured starts an in-process
// NATS server (StartEmbedded, OpenEmbedded) and uses this same backend over
// an in-process connection.
//
// # Wiring
//
// The embedded default (data under ./elector-data/jetstream, no network
// listener, the backend talks to the server in-process):
//
//	b, err := nats.OpenEmbedded(ctx, nats.EmbeddedConfig{DataDir: dir}, nats.Config{}, nats.WithLogger(log))
//	defer b.Close() // also shuts the embedded server down
//
// Three `elector serve` processes forming one JetStream cluster each set a
// distinct, stable ServerName, their own ClusterListen and the others'
// addresses as Routes (Replicas then defaults to 3). An external NATS:
//
//	b, err := nats.Connect(ctx, nats.Config{URLs: urls, CredsFile: creds, Replicas: 3}, nats.WithLogger(log))
//
// The Gateway runs b.Run (the reconciler) and uses b.Ping for readiness.
//
// # Layout
//
// Three streams, named after Config.Stream (default ELECTOR) with subjects
// under Config.SubjectPrefix (default elector):
//
//	ELECTOR         elector.election.<election>         one message per transition
//	ELECTOR_ALIVE   elector.alive.<election>.<nonce>    one liveness message per candidacy
//	ELECTOR_TIMERS  elector.timer.<election>._<timer>   one marker per running timer (see Timers)
//
// A record message is JSON {"v":2,"record":{…},"events":[…],"prev":<seq>}
// (values.go describes the form; version 1 records are still read, but
// older versions read no version 2, so replicas upgrade together): the
// election's whole state after a transition and the events the
// transition caused, written in one publish, so a crash never keeps a
// record without its events or events without their record. The stream
// keeps Config.History messages per election (MaxMsgsPerSubject) and never
// ages them out, and denies deletes and purges, so the latest record of an
// idle election, which holds its term, is never lost.
//
// # Parts
//
// Backend (backend.go) is the gateway's contract and the wiring of these
// parts, one idea per file:
//
//	subjects     subjects.go                the names of streams and subjects (the table above)
//	streams      streams.go                 their configurations, and the liveness stream made again
//	records      record.go, values.go       load, write (the compare-and-set chain), the message form
//	writeQueues  combine.go                 apply: one election's transitions asked meanwhile, written together
//	view         view.go, newest.go         Run's read cache: every election's latest record, the newest event
//	feed         feed.go                    a watch of every election fed by the view
//	reconciler   reconcile.go, run.go       Run: follows the streams, applies deadlines, sweeps
//	timers       timers.go                  handover delays, holds and cooldowns, ended by the server's markers
//	liveness     liveness.go, beat.go       what a replica knows of liveness subjects; publishing and reading them
//	expiry       expiry.go                  the candidacies Run times, and how one is decided expired
//	epochs       epoch.go                   the liveness stream's epoch, and the grant of a new one
//	read index   readindex.go, caughtup.go  the records stream's last sequence, and whether the view reached it
//	tail         tail.go, watch.go          consumers that follow a stream; Watch and Head
//	groupCommit  commit.go, storeaccess.go  records made durable in groups on an embedded server
//	quorumLease  quorum.go                  reads used only while the stream leader hears a quorum
//	KV           kv.go                      the gateway.KV
//
// Campaign, Heartbeat and Resign are in candidates.go, the reads in
// elections.go, the other transitions in abilities.go, publishing in
// publish.go, NATS errors onto the gateway's in errors.go, and the
// embedded server in embedded.go.
//
// # Why two replicas can never promote two leaders
//
// gateway.Record has one leader slot (N slots, with the holders setting
// N), filled only by promote when fewer than N may act, which increments
// Term in the same step (see gateway.Record for the argument). That
// argument needs every stored record to be computed from the record
// stored just before it. Every
// write here is: load the election's last message and its stream sequence
// S (from the stream leader, not a cache), apply the Record method, publish
// with Nats-Expected-Last-Subject-Sequence: S. JetStream appends the
// message only if the subject's last sequence is still S; otherwise it
// answers "wrong last sequence" (API error 10071, or 10164 on replicated
// streams), and the writer reloads and retries with jittered back-off,
// within gateway.Conflicts (then gateway.ErrContended, the write unmade). So
// the records of an election form one chain, whichever replica wrote each
// link, and at most one of two racing promotions is stored. On an R3 stream
// the expectation is checked by the stream leader in the replicated log, so
// it holds across NATS members too.
//
// Within a replica, the transitions of one election asked for while a write
// of it is in flight wait, and the next write applies them all, one after
// another, to one record (combine.go). Each is a step of gateway.Record
// from the record the one before left, so the record stored is the one
// that storing each in turn would have stored last; the records skipped
// were never read by anyone. A burst of resignations at one election then
// costs a few compare-and-sets instead of one each that loses to the
// others and retries.
//
// Terms strictly increase, and each holdership has its own: Term only
// grows inside the chain above, the
// chain's latest link is never deleted (no MaxAge, no purge, per-subject
// limit keeps the newest), and a restarted server recovers the stream from
// disk (R1) or from the other members (R3).
//
// # Liveness: per-candidate TTLs with prompt expiry
//
// NATS KV's per-key TTL is set at create time only, so it cannot carry a
// lease that each heartbeat renews. Instead each candidacy has its own
// subject on the liveness stream (AllowMsgTTL, MaxMsgsPerSubject 1, no
// delete markers). Campaign and every heartbeat publish a message with
// Nats-TTL set to the candidate's TTL, rounded up to whole seconds (the
// server's unit), plus 1% of it in whole seconds for TTLs of 100 s and
// more (lifeTTL), which replaces the previous one. When heartbeats stop,
// the server removes the last message at its TTL, and writes nothing in
// its place.
//
// A candidacy is dead only once a write ordered with its heartbeats says
// so. Run times every candidacy of the records by its last message's
// expiry (timestamp plus TTL) and then asks the server (expiry.go): a
// message still there and expired on the server's clock is deleted by its
// sequence, and the candidacy expired once the delete succeeded; an empty
// subject (under an unchanged epoch, see below) is dead at once. Every
// heartbeat publishes with Nats-Expected-Last-Subject-Sequence set to the
// live message it read, and the stream checks it in the same order as the
// delete: a heartbeat stored first makes the delete fail, a delete stored
// first makes every later heartbeat on that sequence fail. So no heartbeat
// the server acknowledged is outlived by the expiry of its candidacy, and
// Record.Expire (under compare-and-set, whichever replica gets there
// first) promotes no successor while a leader's answer still holds. The
// server's clock, not a replica's, decides when a candidate is dead; a
// replica's only says when to ask. Entry.ExpiresAt is therefore zero in
// stored records; snapshots fill it from the liveness message.
//
// Why the liveness stream has no delete markers (SubjectDeleteMarkerTTL),
// as it had in earlier versions, whose Run expired a candidacy on the
// server's marker: nats-server (v2.15.2, both stores) decides under its
// store's lock that an expired message is its subject's last, releases
// the lock, and only then stores the marker, with Nats-Rollup: sub, which
// removes every message on the subject. A heartbeat conditional on the
// expired message that is checked and stored in between (under the
// stream's isolation lock, not the store's) is acknowledged, "leader
// until now plus a TTL", and then removed by the marker, on which the
// next candidate was promoted: two leaders. The window is microseconds
// standalone and a raft round trip in a cluster, and only a beat stored
// at or after the expiry (two heartbeats missed) is exposed; nothing on
// the server tells such a marker from a plain one afterwards. Without
// markers the server removes an expired message under its store's lock
// and writes nothing, so only this backend's own conditional writes end
// a candidacy. TestLeaderAnsweredByAHeartbeatKeepsItsLeadershipUntilTheAnswersExpiry
// and TestAcknowledgedBeatOutlivesItsTTL aim heartbeats at the server's
// expiry pass. A liveness stream of the earlier layout is made again
// without markers when a replica of this version starts (openAlive, then
// granted: every candidate gets a full TTL), Ping refuses one that has
// markers again (another version changed it back), and a marker found on
// a candidacy's subject decides nothing. Timers keep markers on a stream
// of their own (see Timers), where no conditional writer races them.
//
// The nonce in the subject is a hash of the candidacy's token hash: a
// resigned candidacy's late expiry cannot touch a new candidacy with the
// same id, and the subject reveals nothing that checks a token. Campaign
// publishes the liveness message before the record, so a candidate in a
// record always had one; every Config.SweepInterval Run reads the
// liveness of candidates it does not know to be alive and expires those
// whose subject is empty, which covers expiries missed while no replica
// ran.
//
// # Liveness durability
//
// Records hold the terms and the leader slot and are on disk before they
// are acknowledged (the embedded server's SyncAlways, or R3; see Records
// durability below). Liveness is not: the liveness stream is kept in memory, so a heartbeat
// waits for no disk. A restart of the NATS servers (all of them, for R3)
// may lose it whole. The rule that makes that safe: after a loss every
// recorded candidate gets a fresh full TTL (epochs, epoch.go). A liveness stream
// carries an epoch message, written only after every candidacy in the
// records was given a liveness message of its full TTL (a "grant"; each
// publish conditional on its subject being empty). A candidacy whose
// subject is empty is dead only if the epoch was there before that read
// and is unchanged after it; otherwise the stream is new or was lost, and
// the reader grants first. New grants a liveness stream it finds without
// an epoch, Run's sweep recreates and grants one that is gone or empty
// within Config.SweepInterval, and a liveness stream an older version kept
// on disk is deleted and made again in memory (then granted).
//
// Why a longer life never makes two leaders: a grant writes only liveness
// messages, never a record, so the leader slot and the terms keep the
// compare-and-set argument above. A grant makes a candidate live longer
// than it would have, never shorter, and the one thing a longer life can
// do is keep a leader that stopped heartbeating in its slot for up to one
// more TTL: no one else is promoted meanwhile, which costs availability,
// not safety. A client never acts as leader on the gateway's word alone:
// its step-down rule runs on its own clock from its last successful
// heartbeat, so a leader cut off during the loss has stepped down by
// itself, and if it comes back it is told the term it holds. Expiries in
// the current stream are decided as before.
//
// # Records durability: group commit
//
// A standalone embedded server without a client listener (elector serve's
// default) syncs records in groups rather than one at a time (commit.go):
// its records store writes each record to its file as it comes and syncs
// on a flush, and one flush covers every record stored before it began,
// so concurrent writes share a sync as etcd's do. Nothing of a record
// leaves the stream before a flush has covered it: the write that made it
// is acknowledged after the flush, the view and every watch take it in
// only then, reads of the stream leader wait for what they read, and the
// read index is the highest sequence on disk. So no answer, event or
// write ever rests on a record that a power loss could take back, and at
// most one record per election is ever not on disk (the next is computed
// only from it once it is): the per-election limit, at least 2 records in
// this mode, never drops the last one on disk for it. The mode is the
// server's own for a replicated stream's store (the raft log stands in
// for the per-write sync there; the flush does here); reaching the store
// takes the server's unexported state (storeaccess.go), and any
// difference from what that code expects leaves the store syncing every
// write, as a server with a client listener or in a cluster always does.
//
// # Timers: handover delays and cooldowns end on the server's clock
//
// A handover delay exists to give an expired leader time to notice and
// stand down; ending it early on one replica's fast clock would promote
// the next leader while the old one may still act. So neither it nor an
// error cooldown ends by a replica's clock: the records this backend
// reads and writes are gateway.Record.EngineTimed, whose Advance leaves
// them alone, and HandoverUntil and CooldownUntil are kept only as the
// (approximate) times shown to users. Instead each running timer has a
// marker on the timers stream, which writes delete markers (timers.go):
//
//	elector.timer.<election>._h<term>-<until>          a handover delay
//	elector.timer.<election>._p<term>-<until>          a failed or demoted holder's promise
//	elector.timer.<election>._c<nonce>-<until>         a candidate's cooldown
//
// where <until> is the recorded end in Unix nanoseconds, so a late marker
// of an earlier timer never ends a later one, and <term> is that of the
// holdership whose slot the delay or hold keeps empty: with several
// holders (gateway.Settings.Holders) every slot held back has a marker of
// its own, and the end of one (EndHandover or EndHold of that term) frees
// that slot only. The marker is published
// with Nats-TTL the timer's length rounded up to whole seconds (at least
// one second: the server's unit), before the record that starts the timer
// is written (a failed leader's promise is the exception, see below). The
// timer ends only when the server's delete marker for it is seen: Run
// applies gateway.Record.EndHandover, EndHold or EndCooldown, under
// compare-and-set like every write, in one link of the record chain, so
// the argument above for one leader holds unchanged.
//
// Why a timer never ends early:
//   - The marker is published after the transition's time is taken and
//     before its record is stored (a failed leader's promise: after, see
//     below), with a TTL no shorter than the delay; the server writes the
//     delete marker only once that TTL has passed on its own clock. A
//     crash between publish and write leaves a marker no record names,
//     whose end changes nothing.
//   - Racing writers of one transition publish on the same subject; the
//     last publish replaces the others and its TTL counts: longer, never
//     shorter.
//   - A replica that was down while a delete marker was written finds it
//     (delivered again when Run starts, or read by the sweep every
//     SweepInterval for a marker it does not know alive) and ends the
//     timer then: late, never early. After Config.MarkerTTL the delete
//     marker is gone too, and the next point applies.
//   - A marker that is gone altogether (the in-memory timers stream lost
//     with a restart of the NATS servers, made again by the sweep; a
//     record written by a version without markers, or whose markers were
//     on the liveness stream) ends nothing: the sweep publishes a new marker of
//     the full delay, or of what the record says is left if that is
//     longer, conditional on the subject being empty. The timer then ends
//     at most one full delay and a sweep interval later than it would
//     have, never earlier.
//
// A failed leader's promise (gateway.Record.FailLeader: the gateway put a
// leader in error whose begin webhook went unacknowledged, and the leader
// may not know it yet) holds its slot (with one holder, every promotion)
// until its marker ends, as a handover delay does. So does the promise of
// a holder whose holdership a lowered holders setting ended
// (gateway.Record.Configure, reason holders_reduced): each such holder's
// slot has its own hold and marker, started the same way, so that raising
// the setting again fills no slot whose holder may still act. Its marker is published once the record that
// fails the leader is stored, with the failed leader's whole TTL: a
// heartbeat of the leader may be answered "leader" until that record is
// stored (its answer reads the view at a read index before it), so its
// step-down deadline can be up to a TTL after the store, and the marker
// ends no sooner; published before the record, it could end a TTL after
// a moment that a writer stalled between the two puts long before the
// store. Counting from the verdict rather than from the leader's last
// heartbeat makes the hold up to a whole TTL where the remaining part of
// it would do: the server's clock times the leader's liveness, and no
// replica can tell how much of it is left on that clock. A crash between
// the record and the marker leaves a hold without a marker, which the
// sweep gives one of the whole TTL (the last point above): later, never
// earlier. The
// failed leader's heartbeats renew its own liveness, not this marker.
//
// On a replicated stream the server that expires the marker is the
// stream's leader; a change of stream leader moves the end by at most the
// skew between NATS servers' clocks, as it does a candidate's liveness.
// The rounding up to whole seconds means a 500ms delay holds back for one
// second.
//
// # The view, and reads that are linearizable
//
// Run follows the records stream with one tail per replica (tail.go: a
// server consumer it makes again, from the message after the last one it
// read, when the consumer is lost) into its view (view.go), which keeps
// the latest record of every election: the records the watch delivered,
// which are the stream's state at the last sequence it delivered, and the
// records this replica wrote that it has not delivered yet. Its
// reconciler (reconcile.go) acts on the view. Run follows the liveness
// stream the same way into the Backend's liveness (liveness.go), which
// keeps, per candidacy, its live message's sequence and expiry (or that
// it was deleted at its expiry); and the timers stream, for the timers'
// ends. Election, ElectionLeader, Elections, CountElections,
// CountCandidates and heartbeat answers read the view; nothing per
// request creates a consumer.
//
// A read is linearizable: it fetches the records stream's last sequence
// from the stream leader (a read index, gateway.ReadIndex, fetched after
// the read arrived and shared by the reads that arrived meanwhile), waits
// until the watch has delivered that sequence, and answers from the view.
// Every write acknowledged before the read began has a sequence at or
// below the one fetched, so the answer reflects it. The fetch is a
// message get of the stream's last message (subject ">"), answered by
// the stream leader like stream info but at a fraction of its cost; an
// embedded server outside a cluster, the stream's only copy, reads the
// same sequence from its own store in process instead, and one that
// commits in groups takes the highest sequence on disk, which every
// acknowledged write is at or below, with no request at all.
// CountElections and CountCandidates are the exceptions: they answer from
// the view as it is, for the gateway's limits, which refuse a campaign
// only after a linearizable read (gateway.CandidateCounter). A view still loading
// the stream as it was when Run started, one that does not catch up
// within a second, and a replica without Run read from the stream leader
// as before; a read index that cannot be fetched is
// gateway.ErrUnavailable, never an answer from a view that may be stale.
//
// A local read (gateway.WithLocalRead, the API's consistency=local) of
// Election, ElectionLeader or Elections skips the read index and answers
// from the view as it is, while its tail has a consumer made and not
// given up (view.following) and the connection is up; it may miss what
// the tail has not delivered yet. A consumer that stops answering is
// given up after two missed heartbeats (4s); from then until another is
// made, a local read is read as every other. Expiries the liveness does
// not hold are still looked up. Nothing else honours the mark.
//
// Writes may start from the view's record (apply), but the view decides
// nothing: a write is a compare-and-set on the record's sequence, so one
// computed from a stale record is refused and recomputed from the stream
// leader's, and an outcome that writes nothing (a refusal, nothing to do)
// is only ever taken from the stream leader's record.
//
// # Heartbeats
//
// With Run running a heartbeat is at most one JetStream request on its
// path: it takes the candidate (id, token hash, TTL) from the view and the
// sequence of its live message from the followed liveness stream or from
// the ack of this replica's last beat, publishes the next liveness message
// with Nats-Expected-Last-Subject-Sequence set to it, and meanwhile fetches
// the read index; it answers from the view once that has caught up. It
// decodes nothing: the view holds decoded records, and the answer is
// Record.Status, one scan of the line.
//
// Why this neither revives a dead candidate nor tells a deposed leader it
// leads:
//   - The publish is conditional on the live message the replica knows
//     being still the subject's last. If the message has since left (by
//     its TTL, a replica's delete at its expiry, a purge), or a beat
//     through another replica replaced it, the publish is refused and the
//     heartbeat takes the slow path, which reads the subject from the
//     stream leader and finds the candidate expired. A stale sequence only
//     costs the slow path; it can never make a refused beat succeed. A
//     beat the server stored stays until its own TTL unless a later beat
//     replaces it (see Liveness: no delete marker removes it).
//   - Liveness is not leadership. The leader slot and the term are in the
//     record, written only by compare-and-set on the record chain (see
//     above); a heartbeat writes no record except, when a deadline passed,
//     Record.Advance under the same compare-and-set.
//   - The answer (state, term, leader) comes from the view caught up with a
//     read index fetched after the heartbeat arrived, so a deposition
//     acknowledged before the heartbeat began (an error report through
//     another replica, an expiry) is in it. A deposition racing the
//     heartbeat may land on either side of it, as with any linearizable
//     read; the client's own step-down rule, timed from when it sent its
//     last successful heartbeat, covers that.
//   - A candidacy the view does not know, with a token the view does not
//     match, or whose live message the replica has not seen, takes the slow
//     path: the view is trusted for nothing but a faster route to the same
//     conditional publish.
//   - On a standalone embedded server (in this process, on its clock) a
//     heartbeat whose candidacy's live message already expires at least a
//     TTL from now publishes nothing and answers that expiry: the extra 1%
//     a long TTL's message lives makes a candidate that heartbeats many
//     times a TTL cost one write per 1% of its TTL. The message is the
//     server's, so what the answer rests on survives a crash of the
//     replica; Backend.renewed says why no replica or restarted server
//     expires it sooner.
//   - A leader asked to hand over (a pending transfer in its record) is
//     refused before anything is published, so its liveness is not renewed
//     and the transfer completes at its expiry at the latest. A transfer
//     recorded while a beat is in flight is seen in the answer, which is
//     then a refusal too: that beat extended the leader's life, which only
//     makes the transfer wait longer (gateway.Record.Transfer).
//
// # Holders
//
// An election's holders setting N is in its record's settings, and each
// holder's entry carries its holdership's term and beginning (values.go);
// everything about N is gateway.Record's, applied under the record
// chain's compare-and-set like every transition, so the argument above
// holds per slot: promote fills a slot only while fewer than N may act,
// in one link of the chain, and two replicas racing to fill the last slot
// are ordered by it (the second recomputes from the first's record and
// finds no slot free). A crash of a replica loses nothing: the record
// holds every holder, delay and hold, and every delay and hold has its
// marker (published before the record, or for a hold after it and
// restored by the sweep if the publisher crashed in between, as above).
// Heartbeat answers, ElectionLeader and snapshots fill every holder's
// expiry from its liveness, as the leader's.
//
// # Transfers, error verdicts and deletion
//
// Transfer, Handover and FailLeader are Record methods applied under the
// same compare-and-set as every transition: the check and the change are
// one link of the record chain. FailLeader's record holds the failed
// holder's slot until its promise has lapsed (see Timers).
// DeleteElection writes a tombstone: the election's record with
// "deleted" set and no candidate, holding its last term; it refuses an
// election with a hold still running (a failed or demoted holder's
// promise), since a tombstone keeps no hold. Reads treat it as absent; a campaign or Configure starts the
// election again from it, with terms above the deleted one's, since the
// stream never loses an election's latest record. CountElections before
// Run's view has loaded counts subjects, tombstones included.
//
// # Event ids and watches
//
// An event's id is "<stream sequence>-<index>" of the record message that
// carries it (index from 1), the same on every replica; a bare "<stream
// sequence>" is just after every event of that record. Head is the
// position of the newest event (its id, or "<stream sequence>" where Run's
// view cannot name it; the stream's last sequence when the view cannot be
// used), and so is the cursor of Elections read from the view. Watch uses
// a tail from that sequence, filtered to one election's subject or all of
// them, and deletes its consumer when the watch ends (every consumer also idles out after 30s, should its owner die
// first). A watch of every election (the hub's) goes on, once it has
// reached the view's sequence, with the records the view's own tail
// delivers (feed.go): each record then reaches a replica once and is
// decoded once, and a watch from Head needs no tail at all. Its events
// and checks are a tail's. It is fed only from where the view's tail
// skips nothing: that tail starts with the last record of each election
// when the stream has any (skipping those superseded before it was made),
// so a watch is fed only once the view has passed the stream's end as read
// after its first record; on an empty stream the view's tail starts at the
// first record, and feeds from the start (view.resume). A watch of every
// election made before then (the hub's, as a replica starts, or before its
// Run) reads from a tail of its own until a view can feed it, then moves
// onto the view's records and deletes its consumer (watch.go, adopt), so a
// replica keeps one consumer of the records stream. A cursor that
// does not parse, is past the stream's last sequence, or names a message
// the stream no longer holds is gateway.ErrCursorExpired. An election's
// records are dropped oldest
// first, so a held cursor message means that election's later records are
// all held; a watch of all elections, or a watch of one election from a
// cursor of another, can still find records of the watched election after
// the cursor dropped, which the chain below reveals.
//
// # Watchers that fall behind
//
// The stream keeps Config.History records per election and drops the
// oldest (MaxMsgsPerSubject). A watcher that has not read a record by the
// time its election wrote History more falls behind the history: a slow
// receiver (an event stream whose client reads slowly, the hub stalled on
// a loaded replica), a consumer whose pulls wait on a loaded or lagging
// server, or a consumer made again after missed heartbeats, which starts
// again after the last message the tail delivered while the stream moves
// on. A small History (tests use 5) makes this easy to reach. JetStream
// then delivers the next held message with the next delivery sequence, so
// the tail sees no sign of the loss and the events of the
// dropped records were silently skipped.
//
// A record therefore names the sequence of the record it was computed from
// ("prev", known to the writer from its compare-and-set), so an election's
// records form a checkable chain. Watch checks it: every held record at or
// after the watch's start is delivered in order, so a record whose prev is
// at or after the start and is not the last record the watch got of its
// election follows dropped ones. Watch ends before it and marks every
// cursor before it expired on this replica (watchGap). The receiver
// resumes from its last id and gets gateway.ErrCursorExpired; the
// gateway's hub then cuts its subscribers and starts again from the head,
// and each event stream answers its client's resumption with reset
// snapshots, so the loss is reported, never skipped. The mark is
// conservative: it may refuse a cursor that needed none of the dropped
// records, which costs that receiver a snapshot. Another replica that has
// not seen the gap finds it in its own watch.
//
// The case that went unreported before the mark was the hub's: a hub that
// loses its watch resumes from the last event it got, often of another
// election and still held, and the resumed watch, not having seen the
// lagging election yet, went on past its dropped records: subscribers
// missed events with no reset (TestHubThatFallsBehindHistoryCutsItsSubscribers).
// A watch of one election from another election's cursor ended at the gap
// again on every resumption instead.
//
// The view of Run needs no chain check for its state: every record is an
// election's whole state, so a later record replaces the dropped ones. Its
// reads stay linearizable because each waits for a read index fetched
// after it arrived, and every election's latest record at that index is
// delivered before the view reaches it, unless the view fell so far
// behind that the record was dropped first. That takes History later
// records of the election, all past the index, so the view tells it from
// the consumer's count of records pending after the last one it delivered:
// a view whose delivered-past-the-index plus pending reaches History is
// not used, and the read goes to the stream leader (caughtUpTo). A view
// that does not reach the index within a second is not used either, and
// CaughtUp, which the readiness probe asks, reports it behind, naming both
// sequences. A watch of the view that breaks starts again just after the
// last record it delivered, never from the last record per election,
// which would skip records superseded meanwhile while the view's sequence
// passed them.
//
// # KV
//
// The Backend is also a gateway.KV (webhook endpoints, secrets, delivery
// claims and log), kept in the JetStream KV bucket Config.Stream+"_KV"
// (stream KV_ELECTOR_KV by default), with Config.Replicas and one revision
// per key. A key's "/" is written as "." and its revision is the stream
// sequence of its latest write. Create, Update and Delete are conditional
// publishes (Nats-Expected-Last-Subject-Sequence) checked by the stream
// leader, so compare-and-set holds across replicas and NATS members; a
// refused one is gateway.ErrRevisionMismatch, whether the server answers
// 10071 or, on replicated streams, 10164. Delete is a purge whose marker
// expires after Config.MarkerTTL, so deleted keys leave nothing behind.
// The bucket has direct gets turned off, so Get reads from the stream
// leader and a replica always reads its own writes. List does too: a watch
// of the prefix (whose consumer may live on a lagging follower) gives the
// bulk, and the stream leader every message under the prefix after the
// last one the watch delivered (see List).
//
// # Availability
//
// Reads are served from the view only after a read index fetched from the
// stream leader, so a replica cut off from NATS answers
// gateway.ErrUnavailable rather than a stale leader, and Ping (the
// readiness probe) fails until it reconnects. CaughtUp (the readiness
// probe's watch check) says whether Run's watch has delivered the stream's
// last sequence, and fails while Run is not running.
//
// A member of an embedded cluster that shuts down (elector serve on
// SIGTERM, Backend.Close) first asks JetStream's meta group, if it leads
// it, and the raft group of each stream it leads to step down to a current
// follower, and waits up to HandOverWait for the others to name the new
// leaders (handover.go): a rolling restart pauses writes for a leader
// transfer (tens of milliseconds), not for the election that follows a
// member's silence (4 to 9 s), which only a crash costs. It then deletes
// the consumers of one replica it hosts (the other members' watches), whose
// readers make them again elsewhere at once instead of after two missed
// heartbeats. A request that
// reaches a stream in the moment its leadership moves is dropped without
// an answer, or answered that there is no leader; on a replicated stream
// it is sent again, after half a second without an answer or a few tens
// of milliseconds after "no leader", and only as a copy that cannot be
// stored twice (resend.go). The requests that expire a candidacy (the
// server's clock, the deletion of its liveness message) and the KV's
// (sessions, webhooks) go again too, so that a restart does not hold them
// for the request timeout.
//
// A NATS member cut off from the other members of a cluster is the harder
// case: if it leads the records stream it goes on answering message gets
// from its own store until NATS notices the lost quorum (checked every ten
// seconds), while the other two may elect a leader of their own after four
// seconds and accept writes. So on a replicated stream the read index and
// every load are used only under a quorum lease (quorum.go): the stream
// info must show the leader heard from a quorum of its replicas within the
// last two seconds, half of the least time a follower that heard from it
// waits before standing for election. A replica on a cut-off member
// answers gateway.ErrUnavailable about two seconds after the cut, and Ping
// fails once the leader has not heard from a quorum for four seconds, so
// /readyz reports it. TestMemberCutOffServesNoStaleLeader shows it with
// three members whose routes go through proxies: the member leading the
// meta group and the records stream is cut off; its reads fail as
// unavailable, the other two promote the next candidate after the old
// leader's TTL, terms increase without overlap, and after healing the
// member serves the same state. JetStream refusing
// work for lack of room (too many consumers, no storage or memory left,
// any 503) or not answering in time is gateway.ErrUnavailable too: the API
// answers 503 with Retry-After, and it ends when the load does.
package nats
