// Package etcd is a gateway.Backend over etcd v3 that shares its elections
// with etcd's own election recipe (go.etcd.io/etcd/client/v3/concurrency,
// etcdctl elect): native clients and elector candidates wait in one line.
//
//	b, err := etcd.New(etcd.Config{Endpoints: []string{"10.0.0.1:2379"}, Prefix: "elector"})
//	…
//	defer b.Close()
//	g := gateway.New(b, gateway.Config{})
//	go g.Run(ctx) // the reconciler
//
// # Keys
//
// Each candidate has one lease with its TTL; a follower's heartbeat is one
// keep-alive of the lease, a leader's also writes its promise (see The
// leader's promise). Under the prefix p (Config.Prefix):
//
//	p/<election>/<lease-hex>                  candidacy, on the lease: the line
//	p/<election>/<lease-hex>.moved            the same after a move (see Transfers and priorities)
//	p/_elector/ids/<election>/<candidate-id>  the candidate's lease hex, on the lease
//	p/_elector/cooling/<election>/<lease-hex> candidate in error cooldown, on the lease
//	p/_elector/settings/<election>            error cooldown and handover delay
//	p/_elector/lead/<election>                the lead record: who elector says leads
//	p/_elector/mark/<election>                why elector last removed a key
//	p/_elector/promise/<election>             the leader's promise: its last answered heartbeat
//	p/_elector/revoked/<election>/<lease-hex> a candidacy etcd revoked early, on a lease of its own
//	p/_elector/handover/<election>            marker of a handover delay, on a lease of its own
//	p/_elector/cooldown/<election>/<lease-hex> marker of a cooldown, on a lease of its own
//	p/_elector/kv/<key>                       the gateway.KV (webhooks' endpoints, deliveries…)
//	p/_elector/barrier                        written only to move the replicas' watches (see below)
//
// The candidacy key is concurrency.Election's layout, so
// concurrency.NewElection(session, "p/<election>") and
// `etcdctl elect p/<election> <value>` join the same line. A native
// client's value is whatever it proclaimed; elector shows it as a candidate
// whose id is that value (or "etcd:<lease-hex>" when the value is not a
// valid candidate id) and whose metadata is {"etcd_value": value}.
// Everything else elector keeps is under p/_elector/, which no election's
// line can include: an election name starts with a letter or digit, never
// '_'.
//
// # KV
//
// The Backend is a gateway.KV, where package webhooks keeps its state. Item
// k is the key p/_elector/kv/<k>, its value the item's bytes, its revision
// the key's mod revision. Create is a put in a transaction guarded by
// CreateRevision(key) = 0; Update and a conditional Delete are guarded by
// ModRevision(key) = rev, which a missing key (mod revision 0) never
// satisfies; List reads p/_elector/kv/<prefix>/ in pages at one revision.
// Reads are linearizable. These keys are no election's: the state ignores
// them, and loads of the state read around them. The watch on p/ still
// receives every KV write, values included, on every replica; a revision of
// KV writes only moves the replica's revision and derives no event.
//
// # Values
//
// Elector's values are JSON; durations are milliseconds, times RFC 3339,
// and "at" is the writer's clock when it wrote the value.
//
//	candidacy  {"elector":1,"id":"node-a","metadata":{"addr":"10.0.0.7:8080"},
//	            "ttl_ms":10000,"token_hash":"<sha-256 hex>","priority":5,"at":"…"}
//	cooling    the same, plus "cooldown_until":"…","timed":true
//	ids        the lease in hex, as in the candidacy key
//	settings   {"error_cooldown_ms":10000,"handover_delay_ms":0,"preempt":true,"at":"…"}
//	lead       {"term":41,"key":"<lease-hex>","id":"node-b","metadata":…,"ttl_ms":10000,"since":"…",
//	            "previous":{"id":"node-a","term":37},"previous_end":"resigned",
//	            "ended":"","failed":true,"until":"…","timed":true,"at":"…",
//	            "transfer":{"to":"node-c","key":"<lease-hex>","reason":"transferred","at":"…"}}
//	handover   {"term":41,"until":"…"} (a marker; a cooldown's is {"until":"…"})
//	mark       {"key":"<lease-hex>","reason":"resigned"|"error"|"expired","detail":"…","at":"…"}
//	promise    {"term":41,"key":"<lease-hex>","ttl_ms":10000,"at":"…"}
//	revoked    {"id":"node-a","token_hash":"…","rev":512,"at":"…","expires_at":"…"}
//
// "priority", "preempt", "transfer", "failed" and the lead record's
// "ttl_ms" are left out when 0, false or none, and values written without
// them read so (a lead record without "ttl_ms", written by an older version or
// naming a native leader, makes no promise: its end holds nobody back).
//
// # Who leads
//
// The line is the candidacy keys of an election ordered by create revision,
// as concurrency.Election orders them. Elector reports as leader the head of
// the line only once the lead record names it (its key and create
// revision); the term is that create revision.
//
// The lead record is written only in a transaction that compares the named
// key's create revision, and (when it replaces a record) the record's own
// mod revision. Its writers are Campaign (first in an empty line), Resign
// and ReportError (the leader hands over to the next in line in the same
// transaction that deletes its key), FailLeader (which records the end of
// the leadership it names, "failed", and names nobody new), and the
// reconciler that any replica runs (Run): it acknowledges the head of a
// line nobody leads (once a failed leader's promise has lapsed), and after
// an expiry it first starts the handover delay and then acknowledges the
// next.
// Handover names the target of a transfer in the transaction that moves the
// leader's key behind it, which makes the target the head. (Transfer and
// preemptions write the record too, without changing whom it names.)
// Every one of those transactions names the head of the line, and no key can
// ever get ahead of it: keys created or moved later get higher revisions.
// Therefore:
//
//   - At most one leader: the view of an election at a revision has one lead
//     record naming one key; it counts only while that key exists, and it is
//     then the head of the line.
//   - Terms strictly increase: a leadership is acknowledged only while its
//     key is the head of the line, so every other key then has a greater
//     create revision; a leader after it is a key that was behind it, or
//     was created or moved (re-created, see Transfers and priorities)
//     later, so its term, its key's create revision then, is greater. A
//     transaction creates or moves at most one key of a line, so no two
//     keys of a line share a create revision.
//   - Replicas cannot disagree: leadership is a pure function of the keys at
//     a revision (see view). A replica's answers come from its cache at some
//     revision, so two replicas may be at different revisions, but at a
//     given revision they compute the same leader and term, and a term is
//     the create revision of one key of one candidate: no two candidates can
//     ever be told they hold the same term. Concurrent writers race only on
//     transactions whose comparisons fail for all but one of them.
//   - Native clients agree: elector's leader is always the head of the line,
//     which is what concurrency.Election waits for. A native client may
//     consider itself leader before elector reports it (until the lead
//     record names it, a few milliseconds, or while a handover delay or an
//     expired or failed leader's promise runs, see below), never while
//     elector reports another leader.
//
// These hold at each revision whatever etcd does with leases. What a lease
// ending early can break is time: the promise a heartbeat makes. The next
// section is how elector keeps it.
//
// # The leader's promise
//
// A heartbeat answered "leader" promises the candidate that nobody else
// leads before its TTL has passed since it sent the heartbeat: that is its
// step-down deadline (less the margin it keeps). etcd's lease does not keep
// that promise when etcd misbehaves: an etcd leader frozen longer than the
// TTL (SIGSTOP, a stalled VM) that resumes still believes it is the
// primary lessor, and revokes the leases whose keep-alives its successor
// answered, cluster-wide, up to a TTL early (every etcd version elector
// supports does it; 3.7 rarely). Elector therefore never takes a key's
// disappearance as proof that the TTL passed (promise.go):
//
//   - The leader's heartbeat, beside its keep-alive, puts the promise
//     record in a transaction guarded by the lead record's mod revision
//     (so the record still names this leadership) and the leader's key's
//     create revision (its term), and answers "leader" only when that
//     write succeeded and the cache answering holds it. A follower
//     promoted meanwhile is promised in the same way before it is told.
//     Followers' heartbeats stay a pure keep-alive.
//   - Each replica notes, on its own monotonic clock, when it first held
//     the newest promise of the leadership the lead record names, or its
//     acknowledgement, which is its first promise (a replica that loaded
//     the state later, or again after its watch broke, notes when it
//     loaded it). The promise lapses a TTL (the candidate's "ttl_ms")
//     after that.
//   - After a leadership that ended without the leader asking (its key went
//     without a mark: a lease expired or revoked, a native or manual
//     delete), no replica acknowledges anybody until the promise has
//     lapsed on its clock: not the next in line, not a transfer's target,
//     not a newcomer to an empty line, not the leader itself back from a
//     cooldown (a record whose "ended" is "expired" holds as long).
//     Resign, ReportError and Handover end a leadership in the transaction
//     that acknowledges the next: the leader asked, and nothing is held.
//     FailLeader, the gateway's verdict that a leader never acknowledged
//     its begin webhook, is not the leader asking: the leader may have
//     been told that it leads (by its campaign, a heartbeat, an event or
//     the begin webhook itself) and not yet hear of the verdict. Its
//     transaction moves the key to cooling with a mark "error" (the events
//     of an error report) and writes the lead record "ended":"error",
//     "failed":true, naming nobody, whoever waits; that record holds like
//     an expired one, and a pending transfer is dropped with it. The
//     failed leader's heartbeats write no promise any more (it no longer
//     leads: the promise's guard on its key fails), so they answer
//     "error" and do not extend the hold. Keys may move meanwhile, which
//     makes nobody leader.
//     DeleteElection refuses an election whose promise holds (its lead
//     record is what holds it).
//   - A leader whose promise lapsed on a replica's clock while etcd still
//     holds its key (its lease is longer: whole seconds, etcd's minimum, or
//     a keep-alive whose promise failed) is expired by that replica: one
//     transaction, guarded by the promise record, the lead record and the
//     key, deletes its keys with a mark saying "expired", and its lease is
//     revoked. A heartbeat racing it either promises first (the expiry
//     fails) or finds the candidate gone.
//
// Why this never lets two leaders act: a replica holds a promise only
// after etcd committed it, and etcd commits it only after the candidate
// sent the heartbeat, so the replica's "held at + TTL" is never before the
// candidate's deadline, and no agreement between clocks is needed (only
// that they run at the same rate, as any lease assumes). A heartbeat
// answered "leader" is answered from a cache holding its promise, so an
// acknowledgement of a successor comes at a later revision, and the
// replica writing it held the promise first and waited it out. A
// heartbeat answered "follower", or a leadership the candidate learns of
// from an event or its begin webhook, was sent before the acknowledgement
// that made it lead, which is itself a promise and is waited out the same
// way. So an early revocation costs the time left of the promise, never
// an overlap; a crashed leader fails over at its TTL: its promise lapses
// as its lease would end, and the replica that sees it first expires it
// and acknowledges the next within milliseconds, without waiting for
// etcd's lease check (every 500ms).
//
// What native concurrency.Election clients see meanwhile: a native client
// at the head of the line considers itself leader as soon as its
// predecessor's key is gone, etcd's recipe having no promise to wait for.
// When etcd revokes an elector leader's lease early, or the gateway fails
// an elector leader (FailLeader moves its key out of the line), a native
// client next in line leads at once, beside the elector leader whose
// promise still runs; elector reports no leader until the promise lapses. A native
// leader is promised nothing by elector (its lead record has no
// "ttl_ms"): its lease alone says how long it leads, as for any native
// client, and its end holds nobody back. Mix native and elector
// candidates in one election only where that is acceptable.
//
// Every replica must run a version that keeps promises: an older replica
// acknowledges the next leader when the key goes.
//
// # Candidacies revoked early
//
// A follower whose lease etcd revokes early loses its place: the place is
// its key's create revision, which no write can give back. Elector tells
// the candidate rather than lose it silently (revoked.go): a replica that
// learnt from etcd that the lease would live longer (its own keep-alive
// answers, or the TimeToLive lookups Run makes) and sees the candidacy's
// keys go without a mark more than 500ms before that, records the
// revocation in p/_elector/revoked/<election>/<lease-hex> (created once,
// on a lease of max(4 TTLs, a minute)). The candidate's next heartbeat,
// resignation, error report or handover then fails with a
// *gateway.CandidacyRevokedError: still gateway.ErrCandidateNotFound (the
// API's 404 candidate-not-found, so every client campaigns again, at the
// back of the line), with a "revoked" member saying when the candidacy
// ended and when it should have. A leader revoked early is told the same.
// The record is matched by candidate id and token hash, so a candidacy
// campaigned again is never told of an earlier one. The replica that
// noticed also keeps it in memory and answers precisely at once; another
// replica asked in the moment before the record is written (milliseconds)
// answers a plain candidate-not-found, and so does every replica when
// none that answered the candidate's keep-alives in its last TTL is
// running. The events of a revocation are those of an expiry (reason
// "expired"): they are derived from etcd's history alone, which does not
// tell the two apart.
//
// # Error cooldown and handover delay
//
// ReportError moves the candidate's key from the line to
// p/_elector/cooling/ in one transaction (still on its lease, so it expires
// there if the candidate stops heartbeating); leadership ends at once and
// the lead record goes to the next in line (after FailLeader: once the
// failed leader's promise has lapsed, see The leader's promise). When the
// cooldown ends, the
// reconciler of one replica (a transaction guarded by the cooling key's mod
// revision) re-creates the candidacy key: a new create revision, the back of
// the line. A native client sees the candidate leave the line and join it
// again at the back.
//
// When the leader's key disappears without elector ending the leadership
// (its lease expired or was revoked, its promise lapsed, or a native
// client resigned), the lead record still names the missing key: that is a
// pending handover, and nobody leads. The reconciler starts the handover
// delay (below), and once it has ended, and the leader's promise has
// lapsed (see The leader's promise), acknowledges the head of the line
// (with a transfer pending, its target: see Transfers and priorities). A
// native client at the head of the line does not know about the delay: it
// considers itself leader as soon as its predecessor's key is gone (etcd's
// recipe has no such notion); elector reports no leader until the delay
// has ended.
//
// Both timers end on etcd's clock, never on a replica's: a replica whose
// clock runs ahead must not end a handover delay early, as the delay
// exists to let the expired leader stand down. The transaction that
// starts one (ReportError's, the reconciler's "start handover delay")
// also writes its marker key, p/_elector/cooldown/<election>/<lease-hex>
// or p/_elector/handover/<election>, on a lease of its own granted just
// before, whose TTL is the delay rounded up to whole seconds (etcd raises
// a TTL below its minimum, never lowers one), and marks the cooling key or
// lead record "timed". "until" and "cooldown_until" are only shown. The
// reconciler ends a timed delay or cooldown when a revision holds the
// record without its marker: written together, the marker can only have
// gone with its lease (or by hand), so etcd's lease expiry decides, and
// the lease began after the expiry or the error report that started the
// timer. A record without "timed" (written by an older version) gets a
// marker of the full delay, or of what "until" says is left if that is
// longer: it ends late, never early. etcd extends every lease by its TTL
// when a raft leader takes over, which also only makes a timer longer.
// The marker's lease is revoked only when the transaction certainly did
// not write it (its comparisons failed, or a lease was gone); after an
// error that leaves it unknown (a timeout), the lease is left to expire.
// Ending a timer acknowledges a leader only through the guarded
// transaction above (with a transfer pending, after moving the keys ahead
// of its target while nobody leads), so it cannot make two leaders. A
// marker's lease can be revoked early by the same etcd fault as a
// candidate's, which ends that delay or cooldown early: the handover delay
// is a margin on top of the promise, which holds whatever becomes of the
// marker.
//
// # Transfers and priorities
//
// A transfer (Transfer, or a preemption, which the reconciler starts) is
// written into the lead record, guarded by its mod revision: it changes no
// leadership. While it is pending, every replica refuses the leader's
// heartbeats with gateway.ErrTransferPending before keeping its lease
// alive, so the leader's life runs out unless it hands over (see
// gateway.Record.Transfer for why that never makes two leaders act). The
// target must be first behind the leader before anybody can hand over to
// it: the reconcilers (and Handover itself) move the followers between
// them to the back of the line, one key per transaction. Then Handover, in
// one transaction guarded by the lead record and both keys, moves the
// leader's key to the back and writes the lead record naming the target,
// now the head of the line, with its key's create revision as its term.
// A leader that stays silent expires; after the handover delay the
// reconcilers move the keys ahead of the target and acknowledge it. A
// leader that resigns or errs hands over to the next in line, which is
// the target once it has been moved up; if it has not been yet, the
// transfer is cancelled. A target that leaves cancels the transfer.
//
// Moving a key means deleting it and putting it again, with its value, on
// its lease, under its other name (<lease-hex> and <lease-hex>.moved
// alternate: etcd refuses a transaction that deletes and puts the same
// key), so it gets a new create revision and goes to the back of the line.
// Events treat a moved key as the same candidate: it neither leaves nor
// joins. A candidate's priority orders the line the same way: the
// reconcilers move the elector candidates that stand ahead of a candidate
// of higher priority behind it, one per transaction, never the leader's
// key and never those standing ahead of a pending transfer's target.
// While nobody leads (a handover delay, a failed leader's hold) the head
// of the line is a follower like the others and moves too, and nobody is
// acknowledged until the line is in priority order: so, as in
// gateway.Record, a candidate of higher priority that joins or rejoins
// during a delay or hold leads after it, not the one that happened to be
// first. Moving the head while nobody leads acknowledges nobody; the
// acknowledgement that follows names the head of the line then, as every
// acknowledgement does.
//
// Native candidates. Elector never moves or deletes a native client's key
// and never moves an elector key from behind a native key to ahead of it,
// so a native candidate never loses its place. It counts as priority 0
// and keeps its place: priorities order only the elector candidates
// behind the last native key in line, and a candidate of higher priority
// that arrives after a native one waits behind it. A transfer to a
// candidate behind a native key is refused with a
// *gateway.TransferBlockedError (the API's 409 transfer-blocked), as is a
// transfer away from a native leader (elector cannot ask it to hand
// over); a transfer to a native candidate works, and it leads, as it sees
// for itself, once the keys ahead of it have moved. Why no two leaders can
// result: a native client leads when its key is the oldest of the line,
// and elector's leader is the key the lead record names while it is the
// oldest. Moves take elector keys from ahead of the target to behind it,
// and only while the target is in line. While a leader leads, its key (the
// head's) moves only in the transaction that writes the lead record naming
// the target, which makes the target the oldest; so the oldest key and
// elector's leader change together. After the leader expired nobody leads,
// and the keys ahead of the target (the head's among them) move one by one
// until the target is the oldest, and only then is it acknowledged. No
// native key stands between the head and a target, so a native client
// never becomes the oldest key because of a move.
//
// # Events
//
// Events are derived from a watch on the prefix by comparing the views of
// the touched elections before and after each revision; they depend only on
// etcd's history, so every replica derives the same events with the same
// ids, "<revision>-<index>". A leader.end is reported when the leader's key
// goes (etcd's Observe never reports that): Resign and ReportError write a
// mark naming the key in the same transaction that deletes it, so a key
// deleted in a revision without a mark naming it expired. A native client's
// resignation is therefore reported as an expiry, and so is a lease
// revoked early; a leader that elector expires after its promise lapsed
// is named by a mark with reason "expired".
//
// An event's body is a function of etcd's history, its time included, so
// that every replica, every resumed stream and every webhook attempt
// serialises the same bytes for one id. The time is the newest "at" that
// elector wrote in the revision; a revision without one (etcd expired or
// revoked a lease, a native client wrote) takes the newest "at" elector
// wrote in the election before it, or, when the leader's key went, the end
// of its promise (its acknowledgement or last promise, plus its TTL) if
// that is later; an election elector never wrote in takes the newest "at"
// of all. How far that is from the real time: every stamp is a writer's
// wall clock. While an elector candidate leads, each of its heartbeats
// rewrites its promise, so the newest "at" of its election is at most a
// heartbeat interval old (at most its TTL), and a follower's expiry is
// stamped up to that much (plus etcd's lease check, 500ms) early. A
// crashed leader is expired by elector, with a mark stamped when it
// happened. A leader's key revoked early is stamped with the end of its
// promise, later than the revision that removed it by as much as the
// revocation took off. With no elector leader (a native one, or only
// candidates in cooldown), an expiry is stamped with elector's last write
// in the election, which may be much older.
//
// Snapshots carry "<revision>" as their cursor. A cursor older than etcd's
// last compaction, in the future, or not one of ours gives
// gateway.ErrCursorExpired.
//
// # Replicas and reads
//
// Each Backend follows the prefix with one watch (on a gRPC stream of its
// own) into a cache, and answers reads (Election, Elections, the status in
// answers, CountElections) from it. etcd delivers a watch's events in
// revision order, so a cache that has applied the events of revision r
// holds everything etcd held under the prefix at r.
//
// Reads are linearizable: a read reflects every write etcd acknowledged
// before the read arrived, whichever replica made it. Election, Elections
// and Heartbeat fetch etcd's current revision (a count-only linearizable
// read, which etcd serves through raft's read index) after they arrive,
// and answer once the cache has caught up with it. Concurrent reads share
// one fetch (gateway.ReadIndex): a burst of reads costs etcd two calls.
// A write answers from the cache once it has applied the write's own
// revision, which is as fresh: every write acknowledged before it has a
// lower revision. CountElections, which only feeds the best-effort limits,
// answers from the cache as it is.
//
// A revision that touched nothing under the prefix (a write elsewhere in
// etcd) sends the watch no event. The cache then relies on a progress
// notification, which etcd sends on request, saying that nothing under
// the prefix changed up to a revision; it trusts them only from members
// that send them in order with the events (etcd 3.4.31, 3.5.13, 3.6 and
// later; older members, Debian's 3.4.23 among them, may send one ahead of
// events still queued). When neither events nor a trusted notification
// bring the cache to the revision within 50ms, the replica writes a
// barrier key (p/_elector/barrier; concurrent readers share one write)
// and waits for its event. The barrier is the only write a read can cause,
// and only then.
//
// Why a heartbeat cannot tell a deposed leader that it leads: a follower's
// heartbeat fetches the read index when it arrives, beside its keep-alive,
// and a leader's writes its promise, a transaction whose revision is as
// fresh; either derives its answer from a cache that holds every revision
// up to that one. A deposition acknowledged before the heartbeat arrived
// (an error report from the begin-deadline webhook through another replica,
// a resignation, a handover after expiry) has a lower revision, so the
// answer shows it. A deposition after the heartbeat arrived is concurrent
// with it; the answer is then true at a revision the heartbeat saw, as
// every answer of a distributed lock is, and the candidate learns of it at
// its next heartbeat or from the events. When the cache cannot catch up
// within the request's time the heartbeat fails with gateway.ErrUnavailable
// (503) rather than answer from an old revision; the keep-alive itself may
// have happened, which only keeps the candidate in line, never makes it
// lead.
//
// Why a campaign whose transaction succeeded is never answered "not
// found": it waits for the events of its own revision, never for a
// progress notification (one sent ahead of the queued events let the
// campaign read a cache without its candidacy; with thousands of watches
// on one stream this happened), then reads the cache, which now holds the
// candidacy unless it has gone since (its lease expired, a native client
// deleted its key); that, or a cache that cannot catch up, is answered
// gateway.ErrUnavailable (503), never gateway.ErrCandidateNotFound.
//
// CaughtUp (the readiness probe's watch check) catches up with etcd's
// current revision as a read does and fails when the cache does not reach
// it within a second.
//
// Run (the reconciler) must run on at least one replica: it acknowledges
// leaders after expiries and native campaigns, expires leaders whose
// promise lapsed, ends handover delays and cooldowns, moves keys for
// transfers and priorities, and starts preemptions. Running it on every
// replica is safe and is what the gateway does. Leases are granted in
// whole seconds, rounded up, and etcd raises a TTL below its minimum (1.5
// election timeouts: 1.5s, so 2s, with etcd's defaults): a follower lives
// that long after its last keep-alive, a leader its TTL after its last
// promise. expires_at in answers is the lease's real expiry as this
// replica last learnt it; the promise is the step-down rule's (a TTL from
// sending the heartbeat), not expires_at.
//
// Anyone who can read the prefix can read candidates' metadata and token
// hashes (not tokens), and the KV: webhook endpoints with their signing
// secrets. Anyone who can write it can change elections and webhooks. Give
// elector an etcd role on <prefix>/ and native clients one on the election
// keys they use.
//
// # Connections
//
// The backend connects to each of Config.Endpoints with a client (one
// gRPC connection) of its own and chooses the member of every request
// itself: etcd's client balances over its endpoints round robin and cannot
// tell a stopped member (a frozen process, a network that drops packets)
// from a slow one, so every request it sent there would wait for its
// deadline. A probe asks each member for its status every MemberTimeout/3
// over that connection; a member whose probe failed, that has answered
// none for MemberTimeout, or that knows no raft leader is down until it
// answers again naming one. Requests go round robin to the members that
// are up (to the others only when none is). An attempt waiting on a
// member that goes down or changes its raft term (a request it forwarded
// to the old leader may be lost) is followed by one on another member;
// idempotent requests (reads, the read index, keep-alives, grants, puts)
// also try another member each MemberTimeout an attempt waits, and the
// first answer wins. A writing transaction is not repeated blindly: etcd
// applies an attempt only if its comparisons hold, and every transaction
// elector commits compares a key it writes (DeleteElection's only
// deletes), so once one attempt has applied every other fails. An answer
// that it applied settles the request; one that it did not, only when no
// other attempt may have applied. Otherwise the request fails with
// gateway.ErrUnavailable, as a timeout would, and its writer handles that
// as it handles a timeout.
//
// The replica's watch runs on one member. It moves to another, resuming
// after the last revision it applied (nothing is reloaded), when its
// member goes down, when the watch breaks or loses its leader, and when it
// has been quiet for MemberTimeout/3 and a progress notification asked for
// then does not come within MemberTimeout: a stopped member sends nothing,
// not even an error. A watch of Watch ends when its member goes down, and
// its receiver resumes it elsewhere with the last event's id.
//
// So a stopped or cut off member costs a request about MemberTimeout
// (600ms by default), not its deadline; a stopped raft leader costs every
// request etcd's own leader election on top. gRPC keep-alive (a ping after
// 10s without traffic, the least gRPC's client allows, dropped if not
// answered within 3s, and only while a request or stream is open, as
// etcd's server demands: it answers pings on an idle connection, or more
// often than every 5s, with GOAWAY "too_many_pings") is a backstop for
// long streams. Leases live in etcd, and etcd extends every lease by its
// TTL when a new raft leader takes over, so a member or leader change
// drops no follower that keeps heartbeating (but a raft leader stopped
// for longer than a TTL may, when it resumes, revoke the leases whose
// keep-alives it did not see: see The leader's promise). A leader none of
// whose heartbeats succeeds for its TTL (etcd without a raft leader that
// long) is expired by the replicas once they can write, as its step-down
// rule has stopped it anyway; a replica whose watch broke counts promises
// afresh from its reload. Every request is
// bounded by Config.RequestTimeout; failures to reach etcd are
// gateway.ErrUnavailable. Ping fails while no member can serve a
// linearizable read, CaughtUp while the replica's watch is behind (for
// about MemberTimeout after its member stops).
package etcd
