// Package etcd is a gateway.Backend over etcd v3 that shares its elections
// with etcd's own election recipe (go.etcd.io/etcd/client/v3/concurrency,
// etcdctl elect): native clients and elector candidates wait in one line.
// It is a gateway.MultiHolder: an election of N holders is held by the
// first N keys of its line.
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
// keep-alive of the lease, a holder's also writes its promise (see The
// leader's promise). A campaign takes its lease from a small pool each
// replica grants ahead for the TTLs in recent use (at most 4 TTLs of 16
// leases, dropped and revoked after 10s without a campaign, revoked at
// Close; leasepool.go), so that its path is one raft write, not two; a
// pooled lease more than 100ms old is kept alive beside the campaign's
// transaction, so the candidacy lives its TTL from the campaign. A
// candidacy in a session is on the session's lease instead, shared with
// the session's other candidacies (see Sessions). Under the prefix p
// (Config.Prefix):
//
//	p/<election>/<lease-hex>                  candidacy, on the lease: the line
//	p/<election>/<lease-hex>.moved            the same after a move (see Transfers and priorities)
//	p/_elector/ids/<election>/<candidate-id>  the candidate's lease hex, on the lease
//	p/_elector/cooling/<election>/<lease-hex> candidate in error cooldown, on the lease
//	p/_elector/settings/<election>            error cooldown, handover delay, preempt, holders
//	                                          (absent: gateway.DefaultSettings; a declared campaign
//	                                          creating an election on them writes none, see campaignTxn)
//	p/_elector/lead/<election>                the lead record: who elector says holds, its slots
//	p/_elector/mark/<election>                why elector last removed a key
//	p/_elector/promise/<election>             a holder's promise: its last answered heartbeat
//	p/_elector/promise/<election>/<term>      the same, per holdership (the lead record's list form)
//	p/_elector/revoked/<election>/<lease-hex> a candidacy etcd revoked early, on a lease of its own
//	p/_elector/handover/<election>            marker of a handover delay, on a lease of its own
//	p/_elector/handover/<election>/<term>     the same, per slot (the lead record's list form)
//	p/_elector/cooldown/<election>/<lease-hex> marker of a cooldown, on a lease of its own
//	p/_elector/sessions/<session-id>          a session, on its lease (see Sessions)
//	p/_elector/kv/<key>                       the gateway.KV (webhooks' endpoints, deliveries…)
//	p/_elector/barrier                        written only to move the replicas' watches (see below)
//	p/_elector/version                        the oldest data version every replica runs, as declared
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
//	settings   {"error_cooldown_ms":10000,"handover_delay_ms":0,"preempt":true,"holders":2,"at":"…"}
//	lead       {"term":41,"key":"<lease-hex>","id":"node-b","metadata":…,"ttl_ms":10000,"since":"…",
//	            "previous":{"id":"node-a","term":37},"previous_end":"resigned",
//	            "ended":"","failed":true,"until":"…","timed":true,"at":"…",
//	            "transfer":{"to":"node-c","key":"<lease-hex>","reason":"transferred","at":"…"}}
//	           or {"term":45,"previous":…,"previous_end":…,"at":"…","transfer":{…,"from":"node-b","from_term":41},
//	            "holders":[{"term":41,"key":…,"id":"node-b","metadata":…,"ttl_ms":10000,"since":"…",
//	            "ended":"","until":"…","timed":true},{"term":0,"create":44,…},…]}
//	handover   {"term":41,"until":"…"} (a marker; a cooldown's is {"until":"…"})
//	mark       {"key":"<lease-hex>","reason":"resigned"|"error"|"expired","detail":"…","at":"…"}
//	promise    {"term":41,"key":"<lease-hex>","ttl_ms":10000,"at":"…"}
//	revoked    {"id":"node-a","token_hash":"…","rev":512,"at":"…","expires_at":"…"}
//	session    {"elector":1,"token_hash":"<sha-256 hex>","ttl_ms":10000,"at":"…"}, plus "closing":true
//	version    {"min":2,"at":"…"}
//
// "priority", "preempt", "holders", "transfer", "failed" and the lead
// record's "ttl_ms" are left out when 0, false or none, and values written
// without them read so (a lead record without "ttl_ms", written by an
// older version or naming a native leader, makes no promise: its end holds
// nobody back).
//
// The lead record has two forms (lead.go). Whenever it can be, it is
// written as elector has always written it with one leader (at most one
// slot, the last one acknowledged, its term its key's create revision:
// always with one holder, unless the election had more before), the
// slot's fields in the record itself, with the promises and the handover
// marker at the per-election keys: an election of one holder is stored
// exactly as by earlier versions, which read and write it alongside this
// one. Otherwise its slots are listed in "holders", and the promises and
// markers are per term. Only this version reads the list form: set holders
// above 1 once every replica runs it.
//
// Data versions. A lead record in the one-holder form whose "term" is 0
// names a holdership acknowledged in the transaction that created its
// key: its term is that transaction's revision, which is the record's mod
// revision and the key's create revision (see Campaign). Data version 2
// (this one) reads it so; version 1 (every earlier version) would take the
// holder's key for one that went, and the holder's later promises for
// another holdership's, and could acknowledge a second holder while the
// first still holds. So no replica writes it until
// p/_elector/version declares {"min":2}: the operator's word, once the
// last replica runs version 2 (`elector declare-upgraded`, which calls
// Backend.DeclareUpgraded, or etcdctl put <prefix>/_elector/version
// '{"min":2}'), that none older runs or will
// start. Until then every record written is one both versions read alike,
// so a rolling upgrade mixes versions safely. A replica that finds a
// declared version above its own (an upgrade it has missed) says so
// loudly rather than act on what it may misread: its readiness probe
// (Ping) and its campaigns fail with gateway.ErrUnavailable, and its
// reconciler acts on nothing and logs an error each pass.
//
// Sessions need no declaration. A replica of a version before them reads
// none of their keys: p/_elector/sessions/<id> fits no part of its layout
// and it ignores it, as every version ignores what it does not know. A
// candidacy of a session is to it a candidacy like any other, on its
// lease: it keeps it alive, promises it, moves it and hands it over as
// ever, and its values are those it writes itself. What it does not know
// is that the lease is shared: when it ends one candidacy of a session (a
// resignation, an expiry after its promise lapsed) it revokes the lease,
// which ends every other candidacy of the session at once, as an expiry.
// That costs those candidacies, never an extra holder: each holder's
// slot stays taken until its promise lapses, as after any early
// revocation (see Sessions). Open sessions once every replica runs this
// version.
//
// # Who holds
//
// An election's holders setting N (gateway.Settings.Holders, 1 unless set)
// is how many of its candidates hold it at once. With N = 1 the one holder
// is the leader, and everything below reads so.
//
// The line is the candidacy keys of an election ordered by create revision,
// as concurrency.Election orders them. The lead record keeps the
// election's slots: one per holdership elector acknowledged that is open,
// or that ended and still holds its slot back. Elector reports as holders
// the longest run of keys at the head of the line that open slots name
// (each slot its key and that key's create revision), a native key only as
// the head: the first N keys of the line at most, the N lowest create
// revisions. The leader is the first of them, the longest-standing
// holder. A holdership's term is its key's create revision when it was
// acknowledged, or, when that is not later than the last term handed out
// (a holder that lowering N ended, holding again from the place it kept
// in line), the revision of the write that acknowledged it.
//
// A replica counts a slot as taken while a holder holds it; while it is
// open but its key went without elector ending the holdership (an
// expiry, an early revocation, a native client's resignation), until its
// handover delay has ended and its promise has lapsed; and while it ended
// without its holder's word (the gateway's verdict, a lower N, an expiry
// recorded with nobody waiting), until its promise has lapsed (see The
// leader's promise). A holdership begins only while fewer than N slots
// are taken on the clock of the replica that writes it, and only for the
// first key behind the holders.
//
// The lead record is written only in transactions that compare its own mod
// revision and, when one acknowledges a holder, that holder's key's create
// revision. Its writers are the reconciler that any replica runs (Run),
// which acknowledges the first follower while a slot is free (a newcomer
// to a line with a free slot, after an expiry once the slot's handover
// delay has ended and its promise lapsed, after raising N), starts
// handover delays, and records an expired slot ended when nobody waits;
// Campaign, Configure and Transfer, which make the reconciler's actions at
// once (a campaign into an election whose line was empty and that had no
// lead record, as its own transaction proved by a comparison evaluated
// before its writes, acknowledges itself without waiting for the watch:
// the reconciler's acknowledgement of the view etcd held at its revision.
// Once the prefix is declared at data version 2 (see Data versions) the
// proof's own branch writes the lead record, term 0, in that transaction;
// before, a second transaction right after it, under the reconciler's
// guards, so it applies only while that view still holds, names the term,
// the first one's revision, which is unknown before it commits); Resign and ReportError, whose transaction deletes the holder's key
// and gives its slot to the first follower when that follower may take it
// (see Transfers and priorities); FailLeader, which ends the holdership it
// names, "error", and keeps its slot taken; Configure lowering N, which
// ends the newest holderships, "holders_reduced", in the transaction that
// writes the settings, and keeps their slots taken; and Handover, which
// puts the target of a transfer in the slot of the holder that hands over
// in the transaction that moves the holder's key behind the target.
// (Transfer and preemptions write the record too, changing no
// holdership.) Every transaction that acknowledges a holder names the
// first key behind the holders, and no key can ever get ahead of it: keys
// created or moved later get higher revisions. Therefore:
//
//   - At most N holders: at a revision the lead record has one set of
//     slots; a holder is a key at the head of the line that an open slot
//     names; and no acknowledgement adds a slot while N are taken. Why no
//     more than N act at once, counting those that may act although the
//     record no longer names them, is in The leader's promise.
//   - Terms strictly increase, one per holdership: the lead record holds
//     the last term handed out, and each acknowledgement's term is later
//     than it: its key's create revision when that is later, else the
//     revision of its own write, which is later than every revision
//     before. A transaction acknowledges at most one holder and creates or
//     moves at most one key of a line, so no two holderships share a term
//     and no two keys of a line a create revision.
//   - Replicas cannot disagree: the holders are a pure function of the keys
//     at a revision (see view). A replica's answers come from its cache at
//     some revision, so two replicas may be at different revisions, but
//     at a given revision they compute the same holders and terms, and a
//     term is one holdership's: no two candidates can ever be told they
//     hold the same term. Concurrent writers race only on transactions
//     whose comparisons fail for all but one of them. Whether a slot is
//     taken also depends on the replica's clock (promises), but only as
//     the replica writing an acknowledgement counts it, and it counts no
//     promise short (see The leader's promise).
//   - Native clients agree: elector's longest-standing holder is always the
//     head of the line, which is what concurrency.Election waits for. A
//     native client may consider itself leader before elector reports it
//     (until the lead record names it, a few milliseconds, or while a
//     handover delay or an expired or failed holder's promise runs, see
//     below), never while elector reports another holder at the head.
//
// What native clients see with N above 1. A native concurrency.Election
// client knows one leader, the oldest key, and considers itself a
// follower anywhere else in line; Leader and Observe show it the head of
// the line, elector's longest-standing holder, whose key's create revision
// is that holder's term (unless it holds again after a lower N, above),
// not the election's last term. Elector counts a native key as a holder
// only at the head of the line, where it leads by its own rule, and a
// native key further back ends the run of holders: the candidates behind
// it wait until it reaches the head, and while it waits it is a follower
// by its rule and by elector's. Why that keeps no more than N acting,
// counting native clients by their own rule: a native client acts only as
// the head of the line, which it becomes only once every key ahead of it
// has gone, and elector's holders are always ahead of any native key
// that is not the head; so while a native client acts uncounted (before
// elector acknowledges it), no elector candidate holds, and the slots
// taken are those of holderships ended without their word, which act
// only where they would beside a native leader with one holder: when etcd
// revoked their leases early or the gateway failed them (see below).
//
// These hold at each revision whatever etcd does with leases. What a lease
// ending early can break is time: the promise a heartbeat makes. The next
// section is how elector keeps it.
//
// # The leader's promise
//
// A heartbeat answered "leader" promises the candidate that its holdership
// goes on, and counts among the N, until its TTL has passed since it sent
// the heartbeat: that is its step-down deadline (less the margin it
// keeps). With one holder: nobody else leads before then. etcd's lease
// does not keep that promise when etcd misbehaves: an etcd leader frozen
// longer than the TTL (SIGSTOP, a stalled VM) that resumes still believes
// it is the primary lessor, and revokes the leases whose keep-alives its
// successor answered, cluster-wide, up to a TTL early (every etcd version
// elector supports does it; 3.7 rarely). Elector therefore never takes a
// key's disappearance as proof that the TTL passed (promise.go):
//
//   - A holder's heartbeat, beside its keep-alive, puts the promise record
//     of its holdership in a transaction guarded by the lead record's mod
//     revision (so the record still names this holdership open) and the
//     holder's key's create revision, and answers "leader" only when that
//     write succeeded and the cache answering holds it. A follower
//     promoted meanwhile is promised in the same way before it is told.
//     Followers' heartbeats stay a pure keep-alive. The record is
//     p/_elector/promise/<election> while the lead record has the
//     one-holder form, p/_elector/promise/<election>/<term> otherwise; the
//     writes of the lead record that drop a slot delete its per-term
//     record (no promise can be written for it after: the guard).
//   - Each replica notes, on its own monotonic clock, when it first held
//     the newest promise of each holdership the lead record keeps, or its
//     acknowledgement, which is its first promise (a replica that loaded
//     the state later, or again after its watch broke, notes when it
//     loaded it). The promise lapses a TTL (the candidate's "ttl_ms")
//     after that.
//   - A holdership that ended without its holder asking keeps its slot
//     taken until its promise has lapsed on the clock of the replica that
//     counts it (see Who holds): after its key went without a mark (a lease
//     expired or revoked, a native or manual delete), no replica fills
//     that slot (not with the next in line, a transfer's target, a
//     newcomer, nor the holder itself back from a cooldown; a slot whose
//     "ended" is "expired" holds as long). Resign, ReportError and Handover
//     end a holdership on the holder's word, in the transaction that may
//     acknowledge the next: nothing is held. FailLeader, the gateway's
//     verdict that a holder never acknowledged its begin webhook, is not
//     the holder asking: it may have been told that it holds (by its
//     campaign, a heartbeat, an event or the begin webhook itself) and not
//     yet hear of the verdict. Its transaction moves the key to cooling
//     with a mark "error" (the events of an error report) and keeps the
//     slot, "ended":"error" ("failed":true in the one-holder form), taken
//     whoever waits; a pending transfer of that holdership is dropped with
//     it. Lowering N is not the holders' word either: each holdership it
//     ends keeps its slot, "ended":"holders_reduced", taken the same way,
//     while its holder, still in line, is told "follower". A holder so
//     ended writes no promise any more (the promise's guard on the lead
//     record fails: it no longer holds), so its heartbeats answer "error"
//     or "follower" and do not extend the hold. The other slots are
//     unaffected: they are filled, and their holders promised, as ever.
//     Keys may move meanwhile, which makes nobody a holder.
//     DeleteElection refuses an election while such a promise holds (its
//     lead record is what holds it).
//   - A holder whose promise lapsed on a replica's clock while etcd still
//     holds its key (its lease is longer: whole seconds, etcd's minimum, or
//     a keep-alive whose promise failed) is expired by that replica: one
//     transaction, guarded by its promise record, the lead record and the
//     key, deletes its keys with a mark saying "expired", and its lease is
//     revoked. A heartbeat racing it either promises first (the expiry
//     fails) or finds the candidate gone.
//
// Why this never lets more than N act at once (two leaders, with one
// holder), counting every holder that may act by the step-down rule: a
// replica holds a promise only after etcd committed it, and etcd commits
// it only after the candidate sent the heartbeat, so the replica's "held
// at + TTL" is never before the candidate's deadline, and no agreement
// between clocks is needed (only that they run at the same rate, as any
// lease assumes). A holder may act until its deadline whatever ended its
// holdership; those that ended on the holder's word stopped first, and
// those whose lease expired passed their deadline (their promise lapsed
// with the lease) before the key went. Every other holdership that may
// still act keeps its slot taken until its promise lapses on the clock of
// any replica that would fill the slot. A heartbeat answered "leader" is
// answered from a cache holding its promise, so an acknowledgement that
// counts the slot free comes at a later revision, from a replica that
// held the promise first and waited it out. A heartbeat answered
// "follower", or a holdership the candidate learns of from an event or its
// begin webhook, was sent before the acknowledgement that made it hold,
// which is itself a promise and is waited out the same way. So the
// holders that may act are at most the slots taken, and a holdership
// begins only while fewer than N are taken: no more than N act, also
// across a change of N (lowering keeps the ended ones' slots taken;
// raising fills only slots that are free). An early revocation costs its
// slot the time left of the promise, never an extra holder; a crashed
// holder fails over at its TTL: its promise lapses as its lease would end,
// and the replica that sees it first expires it and fills the slot
// within milliseconds, without waiting for etcd's lease check (every
// 500ms).
//
// What native concurrency.Election clients see meanwhile: a native client
// at the head of the line considers itself leader as soon as its
// predecessor's key is gone, etcd's recipe having no promise to wait for.
// When etcd revokes an elector holder's lease early, or the gateway fails
// an elector holder (FailLeader moves its key out of the line), a native
// client that thereby becomes the head leads at once, beside the elector
// holder whose promise still runs; elector does not count it until the
// promise lapses. With one holder that is two leaders; with N, more than
// N only when every slot is so held. A native holder is promised nothing
// by elector (its slot has no "ttl_ms"): its lease alone says how long it
// holds, as for any native client, and its end holds nobody back. Mix
// native and elector candidates in one election only where that is
// acceptable.
//
// Every replica must run a version that keeps promises: an older replica
// acknowledges the next leader when the key goes.
//
// # Sessions
//
// A session (gateway.Sessioner; sessions.go) is what etcd's
// concurrency.Session is: one lease that many candidacies share, one per
// election at most, so that a process campaigning in many elections
// keeps them all alive with one keep-alive. OpenSession grants the lease
// (the TTL rounded up to whole seconds, at least etcd's minimum) and
// creates p/_elector/sessions/<id> on it. A campaign in the session puts
// its candidacy and id key on that lease in one transaction and writes
// nothing else: no grant, no pooled lease (session leases never enter or
// leave the pool), the session read from the replica's cache (or with
// one read when the cache does not hold it yet). The transaction requires
// the session's key at the revision the campaign read (so its lease lives
// and it is not closing) and no key of the session in the election's
// line or cooling: the keys are named after the lease, so a session has
// one candidacy per election (gateway.ErrSessionInElection). Its TTL is
// the session's.
//
// The lease is shared, so no candidacy of a session ever revokes it:
// Resign, ReportError, FailLeader, the reconcilers' expiry of a holder
// whose promise lapsed, every removal of a candidacy deletes its keys
// only (revoke refuses a session's lease). The lease ends with the
// session: by its expiry, or by CloseSession, which rewrites the key
// "closing" (every campaign in the session compares it, so none applies
// after), resigns each candidacy as Resign does (a holder hands over at
// once, reason resigned), then revokes the lease; a close cut short is
// finished by a second one. A campaign whose transaction's answer does
// not come cannot revoke its lease either: it rewrites the session's key
// unchanged (a fence: the lost transaction's comparison can no longer
// hold), then reads its id key to tell whether it applied.
//
// Why a session cannot make two leaders. A holder in a session is
// renewed by every keep-alive of the lease, not only by its own
// heartbeats: KeepSession, and a heartbeat of any candidacy of the
// session. Its process counts on each such renewal it is told of (the
// step-down deadline of gateway.Session's answer, a TTL from sending it).
// So every keep-alive elector makes of a session's lease writes the
// promise of each holder on it, from a cache as fresh as the call, before
// it answers, and fails if one cannot be written (renewSession): a
// holder's promise is never older than the last renewal its process was
// told of, and its slot stays taken until that promise lapses (see The
// leader's promise), whatever ends the holdership. A renewal does not
// extend a holdership that ended without its holder's word (the
// gateway's verdict, a lower holders setting): KeepSession's answer gives
// it nothing, and its promise stays the last one it was given. Every path
// that ends a holdership or fills a slot on a replica's own clock rather
// than on the holder's key going is timed by the promise: a holder's
// expiry after its promise lapsed (which a live session, renewing and
// promising, never lets happen), the hold of an ended slot, the handover
// delay, which only adds to it. So:
//
//   - Expiry: the keys go with the lease, at least a TTL after the last
//     renewal; each holder's slot is held until its last promise lapses.
//   - A frozen etcd member that resumes and revokes the lease early (see
//     Candidacies revoked early): every candidacy of the session goes at
//     once, without a mark; each holder's slot is held until the promise
//     of the session's last renewal lapses on the clock of whichever
//     replica would fill it, as for a holder on a lease of its own. The
//     early revocation costs the slots that time, never an extra leader.
//   - Transfers: a holder asked to hand over has its own heartbeats
//     refused (gateway.ErrTransferPending, before their keep-alive), but
//     its key is on the session's lease, which the session's renewals keep
//     alive, and they promise it like any holder. So a transfer (or a
//     preemption) away from a holder in a session completes only by its
//     handover (or resignation, or error report), or once its session
//     ends, by expiry or close: never on a timer while the session's
//     answers may tell it that it is renewed. A process that only renews
//     its session learns of the transfer from the election's events.
//   - Error cooldowns and handover delays are timed on leases of their
//     own (timers.go), as ever; a cooling candidacy stays on the session's
//     lease and comes back on it.
//
// Whichever replica answered the renewals, every replica holds the
// promises (they are keys), and a replica counts each from when it first
// held it, after etcd committed it, which is after the renewal was sent.
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
// campaigned again is never told of an earlier one. A session's lease
// revoked early ends each of its candidacies so, each told at its own
// next request (KeepSession answers gateway.ErrSessionNotFound). The replica that
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
// there if the candidate stops heartbeating); a holdership ends at once and
// its slot goes to the next in line (after FailLeader: once the failed
// holder's promise has lapsed, see The leader's promise). When the
// cooldown ends, the reconciler of one replica (a transaction guarded by the cooling key's mod
// revision) re-creates the candidacy key: a new create revision, the back of
// the line. A native client sees the candidate leave the line and join it
// again at the back.
//
// When a holder's key disappears without elector ending the holdership
// (its lease expired or was revoked, its promise lapsed, or a native
// client resigned), its slot in the lead record still names the missing
// key: the slot is taken and nobody holds it. The reconciler starts the
// slot's handover delay (below), and once it has ended, and the holder's
// promise has lapsed (see The leader's promise), acknowledges the first
// follower into it (with a transfer of that holdership pending, its
// target: see Transfers and priorities), or, with nobody waiting, records
// the slot "ended":"expired". Each slot has its own delay; the others are
// unaffected. A native client at the head of the line does not know about
// the delay: it considers itself leader as soon as its predecessor's key
// is gone (etcd's recipe has no such notion); elector reports it no
// holder until the delay has ended.
//
// Both timers end on etcd's clock, never on a replica's: a replica whose
// clock runs ahead must not end a handover delay early, as the delay
// exists to let the expired leader stand down. The transaction that
// starts one (ReportError's, the reconciler's "start handover delay")
// also writes its marker key, p/_elector/cooldown/<election>/<lease-hex>
// or p/_elector/handover/<election> (…/<election>/<term> in the lead
// record's list form; its value names the slot's term either way), on a
// lease of its own granted just before, whose TTL is the delay rounded up
// to whole seconds (etcd raises a TTL below its minimum, never lowers
// one), and marks the cooling key or the lead record's slot "timed". "until" and "cooldown_until" are only shown. The
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
// Ending a timer acknowledges a holder only through the guarded
// transaction above (with a transfer pending, after moving the keys ahead
// of its target), so it cannot make more than N. A
// marker's lease can be revoked early by the same etcd fault as a
// candidate's, which ends that delay or cooldown early: the handover delay
// is a margin on top of the promise, which holds whatever becomes of the
// marker.
//
// # Transfers and priorities
//
// A transfer (TransferFrom, or a preemption, which the reconciler starts)
// names the holdership asked to hand over ("from", "from_term") and the
// target, and is written into the lead record, guarded by its mod revision
// and both keys: it changes no holdership. While it is pending, every
// replica refuses that holder's heartbeats with
// gateway.ErrTransferPending before keeping its lease alive, so its life
// runs out unless it hands over (see gateway.Record.Transfer for why that
// never makes more holders act); the other holders go on. (A holder in a
// session is renewed by its session whatever its own heartbeats are told:
// a transfer away from it completes only by its handover or with its
// session; see Sessions.) The target must
// be the first behind the holders before anybody can hand over to it: the
// reconcilers (and Handover itself) move the followers between them to
// the back of the line, one key per transaction. Then Handover, in one
// transaction guarded by the lead record and both keys, moves the
// holder's key to the back and writes the lead record with the target's
// holdership in place of the holder's, the target now first behind the
// other holders, its term its key's create revision (see Who holds);
// this only while a slot is free without the holder's (fewer than N
// taken besides it on the replica's clock: after a lower N it may not be)
// and the target may hold (a native one only as the head). Otherwise the
// transaction ends the holdership alone, the transfer stays pending with
// "handed":true, and the target takes the next slot that frees once it
// may hold, as gateway.Record.Handover promotes it. A
// holder that stays silent expires; after its slot's handover delay the
// reconcilers move the keys ahead of the target and acknowledge it into
// the first slot that frees. A holder that resigns or errs hands its slot
// to the first follower, which is the target once it has been moved up;
// if it has not been yet, the transfer is cancelled; with no slot free it
// stays, "handed" as above. A target that leaves cancels the transfer.
// The gateway's verdict on the holder, or a lower N, that ends its
// holdership keeps it, "handed", while the slot is held: the target
// takes the next slot that frees, as in gateway.Record.
//
// With more than one holder, other slots may free while a transfer is
// pending. The holders are the head of the line, so nobody behind the
// target can hold before it: while the target is the first behind the
// holders and the holdership it replaces is still open, a slot that frees
// stays free until that holdership ends (its holder's heartbeats are
// refused, so within its TTL), and then the target takes a slot and the
// next follower the other. (The gateway's Record gives such a slot to the
// follower behind the target at once; on etcd it waits.) Before the
// target has been moved up, the first follower takes the slot, ahead of
// the target, as in the Record. Once the holdership it replaces has
// ended, the target takes the next slot that frees.
//
// Moving a key means deleting it and putting it again, with its value, on
// its lease, under its other name (<lease-hex> and <lease-hex>.moved
// alternate: etcd refuses a transaction that deletes and puts the same
// key), so it gets a new create revision and goes to the back of the line.
// Events treat a moved key as the same candidate: it neither leaves nor
// joins. A candidate's priority orders the line the same way: the
// reconcilers move the elector candidates that stand ahead of a candidate
// of higher priority behind it, one per transaction, never a holder and
// never those standing ahead of a pending transfer's target. While nobody
// holds (a handover delay, a failed holder's hold) the head of the line is
// a follower like the others and moves too, and no follower is
// acknowledged until the line behind the holders is in priority order:
// so, as in gateway.Record, a candidate of higher priority that joins or
// rejoins during a delay or hold holds after it, not the one that happened
// to be first.
//
// Within a priority the line is in the order of arrival, a holder ended by
// a lower holders setting ahead of the followers, as in gateway.Record.
// Since keys move only to the back, restoring that order can take several
// moves (a lowered holder behind a candidate of higher priority, then
// every follower of its priority behind it), each planned afresh from the
// line the one before left. So a key moved only to make way keeps its
// place in its value ("rank": the create revision it stood at), a lowered
// holder is given a rank ahead of every follower in the same transaction
// that ends its holdership, and the line is in order when its keys stand
// by priority, then rank (entry.rank). A key that goes to the back as a
// new arrival (a handover's old holder, a rejoin after a cooldown) has no
// rank: its new create revision is its place. Moving the head while nobody holds acknowledges nobody; the
// acknowledgement that follows names the first follower then, as every
// acknowledgement does. With preempt set and every slot held, a first
// follower of higher priority than the holder of lowest priority (the
// newest of equals; a native holder aside) starts a transfer from that
// holder to itself.
//
// Native candidates. Elector never moves or deletes a native client's key
// and never moves an elector key from behind a native key to ahead of it,
// so a native candidate never loses its place. It counts as priority 0
// and keeps its place: priorities order only the elector candidates
// behind the last native key in line, and a candidate of higher priority
// that arrives after a native one waits behind it. A transfer to a
// candidate behind a native key is refused with a
// *gateway.TransferBlockedError (the API's 409 transfer-blocked), as is a
// transfer away from a native holder (elector cannot ask it to hand
// over); a transfer to a native candidate works, and it holds, as it sees
// for itself, once the keys ahead of it have moved and it is the head (a
// native client holds only as the head, see Who holds). Why no extra
// holder can result: a native client leads when its key is the oldest of
// the line, and elector's longest-standing holder is the oldest key while
// it holds. Moves take elector keys from ahead of the target to behind
// it, and only while the target is in line. While a holder holds, its key
// moves only in the transaction that writes the lead record with the
// target in its place, which keeps the holders the head of the line; so
// the oldest key and elector's longest-standing holder change together.
// After the holder expired (or handed over with no slot free) its slot is
// taken and nobody holds it, and the keys ahead of the target move one by
// one (the head's among them, when nobody else holds) until the target is
// the first behind the holders, and only then is it acknowledged; ahead
// of a native target, only once fewer than N slots are taken, so that it
// does not act as the head while a promise holds its slot. No native key stands between the
// holders and a target, so a native client never becomes the oldest key
// because of a move.
//
// # Events
//
// Events are derived from a watch on the prefix by comparing the views of
// the touched elections before and after each revision; they depend only on
// etcd's history, so every replica derives the same events with the same
// ids, "<revision>-<index>". A leader.end is reported when a holder's key
// goes (etcd's Observe never reports that): Resign and ReportError write a
// mark naming the key in the same transaction that deletes it, so a key
// deleted in a revision without a mark naming it expired. A native client's
// resignation is therefore reported as an expiry, and so is a lease
// revoked early; a holder that elector expires after its promise lapsed
// is named by a mark with reason "expired". A holder whose key stays in
// line ended by a handover (the lead record's "previous_end" says
// transferred or preempted) or by a lower N (its slot says
// "holders_reduced"). One revision's ends come the newest holdership
// first, its beginnings the oldest first, as the gateway's Record emits
// them; each names its holdership's term, the other events the last term
// handed out.
//
// An event's body is a function of etcd's history, its time included, so
// that every replica, every resumed stream and every webhook attempt
// serialises the same bytes for one id. The time is the newest "at" that
// elector wrote in the revision; a revision without one (etcd expired or
// revoked a lease, a native client wrote) takes the newest "at" elector
// wrote in the election before it, or, when holders' keys went, the
// latest end of their promises (each its acknowledgement or last promise,
// plus its TTL) if that is later; an election elector never wrote in takes
// the newest "at" of all. How far that is from the real time: every stamp
// is a writer's wall clock. While an elector candidate holds, each of its
// heartbeats rewrites its promise, so the newest "at" of its election is
// at most a heartbeat interval old (at most its TTL), and a follower's
// expiry is stamped up to that much (plus etcd's lease check, 500ms)
// early. A crashed holder is expired by elector, with a mark stamped when
// it happened. A holder's key revoked early is stamped with the end of its
// promise, later than the revision that removed it by as much as the
// revocation took off. With no elector holder (a native one, or only
// candidates in cooldown), an expiry is stamped with elector's last write
// in the election, which may be much older.
//
// A Watch from where this replica's cache is (after "", or after its Head,
// as the gateway's hub starts) takes the events the cache derives as it
// applies its watch (feed.go): the replica's one watch feeds its reads
// and its hub, so etcd sends each event once and the replica decodes it
// once. A Watch from any other cursor derives the events with a watch of
// its own from etcd's history; both give the same bytes for each id. A
// fed Watch that falls more than 8,192 events behind, or whose cache must
// load the state afresh (a compaction), closes after what it was given,
// and its receiver resumes from the last event it got.
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
// before the read arrived, whichever replica made it. Election, Elections,
// ElectionLeader (a read of the holders alone, derived by the same code
// from the same cache without copying the rest of the election) and
// Heartbeat fetch etcd's current revision (a count-only linearizable
// read, which etcd serves through raft's read index) after they arrive,
// and answer once the cache has caught up with it. Concurrent reads share
// one fetch (gateway.ReadIndex): a burst of reads costs etcd two calls.
// A write answers from the cache once it has applied the write's own
// revision, which is as fresh: every write acknowledged before it has a
// lower revision. CountElections and CountCandidates, which only feed the
// best-effort limits (a campaign's check costs no round trip), answer from
// the cache as it is.
//
// A local read (gateway.WithLocalRead, the API's consistency=local) of
// Election, Elections or ElectionLeader skips the read index and answers
// from the cache as it is while a watch follows etcd and has delivered
// within MemberTimeout: it may miss what the watch has not delivered yet.
// A member that stops sending is not read from for longer than
// MemberTimeout; one cut off from its quorum that goes on answering ends
// the watch itself once it knows it has no leader (the watch requires
// one), within a few election timeouts. Then, and while the watch moves
// to another member, local reads take the read index like every other.
// Nothing else honours the mark: a write's checks, heartbeats, promises
// and the reconciler read as fresh whatever their context carries
// (freshRead).
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
// Why a heartbeat cannot tell a deposed holder that it holds: a follower's
// heartbeat fetches the read index when it arrives, beside its keep-alive,
// and a holder's writes its promise, a transaction whose revision is as
// fresh; either derives its answer from a cache that holds every revision
// up to that one. A deposition acknowledged before the heartbeat arrived
// (an error report from the begin-deadline webhook through another replica,
// a resignation, a handover after expiry, a lower N) has a lower revision, so the
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
// holders after expiries, native campaigns and raised holders settings,
// expires holders whose promise lapsed, ends handover delays and
// cooldowns, moves keys for
// transfers and priorities, and starts preemptions. Running it on every
// replica is safe and is what the gateway does. Leases are granted in
// whole seconds, rounded up, and etcd raises a TTL below its minimum (1.5
// election timeouts: 1.5s, so 2s, with etcd's defaults): a follower lives
// that long after its last keep-alive, a holder its TTL after its last
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
//
// # Batches of writes
//
// A replica sends its writing transactions to etcd in batches while its
// earlier writes are under way (group commit, batch.go): a write that
// finds no batch under way goes at once, alone; the writes that arrive
// meanwhile wait for it and go together, up to Config.WriteBatch, as the
// nested transactions of one transaction, and a second batch goes beside
// the first only once a full one waits. One raft proposal, WAL entry,
// read view and gRPC call then carry a batch.
// No write changes its meaning in a batch: etcd evaluates every comparison
// of a transaction, nested ones included, before any of its writes, and a
// batch holds only writes of which none writes a key that another
// compares, reads or writes, so each sees and does what it would alone,
// and never two writes of one election, even of disjoint keys (each was
// planned on a view of the whole election, and two candidacy keys created
// in one revision would tie in the line's order): a revision still holds
// at most one write of an election. A batch etcd refuses as a request (a lease not found,
// too many operations, too large) applied nothing, and each of its writes
// is sent again alone. A batch is guarded as a whole (it applies each of
// its writes at most once) and counts as applied only when every write in
// it did: an answer otherwise, with another attempt that may have applied,
// fails every write in it as a timeout would.
package etcd
