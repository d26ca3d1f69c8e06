// SessionKeeper: a session that keeps itself alive, and the step-down rule
// for the leaders among its candidacies: what the Go client's KeepSession
// and Lead do.
//
// Why a lead cannot outlive what the gateway granted: its deadline only
// ever comes from an answer of the gateway to a request sent at a known
// time, counted from that send time (the gateway counts from when it
// received the request, which is later), minus the step-down margin. A
// campaign does not move a session's expiry, so before any answer names
// the candidacy the deadline is the last renewal's. An answer that no
// longer shows it leading with its term ends it at once; so does the end
// of the keeper. Failed heartbeats move nothing: the lead's own timer (and
// the clock check of active) ends it on time whatever the network does.

import { monotonicNow, sleep } from "./backoff.js";
import { DEFAULT_CANDIDATE_TTL_MS, stepDownMargin } from "./candidacy-config.js";
import { silentLogger, type CallOptions, type Client, type Logger } from "./client.js";
import { SessionEndedError, SessionNotFoundError, SessionTokenMismatchError, SessionTokenMissingError } from "./errors.js";
import { Leadership, type Reason } from "./leadership.js";
import { parseDuration, sessionStepDownDeadline } from "./session.js";
import type { CampaignRequest, CampaignResult, OpenedSession, Session } from "./types.js";

/** Options of keepSession. */
export interface SessionKeeperOptions {
  /** How long the session's candidacies live without a heartbeat, in milliseconds; the keeper heartbeats every TTL/3. Default DEFAULT_CANDIDATE_TTL_MS. */
  ttlMs?: number;
  /** Ends the heartbeats when it aborts (the keeper ends with its reason): the session then expires by its TTL. It bounds the opening too. */
  signal?: AbortSignal;
  /** Receives the keeper's failed heartbeats and its end; console fits. Default: silent. */
  logger?: Logger;
  /** The clock of the send times, in milliseconds since the epoch. Default: the monotonic clock, as a Candidacy's. Tests move it. */
  now?: () => number;
}

/** The last heartbeat answer of a SessionKeeper, as last() gives it. */
export interface SessionAnswer {
  /** The answer: each candidacy of the session with its state, term and expires_at (none in the session as opened). */
  session: Session;
  /** When its heartbeat (or the opening) was sent, on the keeper's clock: lead() takes it. */
  sent: number;
  /** Resolves when the next answer comes or the keeper ends; it never rejects. */
  next: Promise<void>;
}

/** What SessionKeeper.campaign gives: the campaign's answer and when it was sent. */
export interface SessionCampaign {
  /** The candidacy's status (its token is the session's). */
  status: CampaignResult;
  /** When the campaign was sent, on the keeper's clock: lead() takes it. */
  sent: number;
}

/**
 * keepSession opens a session on client and keeps it alive: it heartbeats
 * it every TTL/3 (sooner again after a failure) until options.signal
 * aborts, stop() or close() is called, or the gateway answers that the
 * session is gone (it expired while no heartbeat got through, or was
 * closed elsewhere). Without close() the session then expires by its TTL.
 *
 * Errors: those of Client.openSession.
 */
export async function keepSession(client: Client, options: SessionKeeperOptions = {}): Promise<SessionKeeper> {
  const now = options.now ?? monotonicNow;
  const sent = now();
  const opened = await client.openSession(options.ttlMs ?? DEFAULT_CANDIDATE_TTL_MS, { signal: options.signal });
  const k = new SessionKeeper(client, opened, sent, { logger: options.logger, now });
  k.start(options.signal);
  return k;
}

/** leadDeadline applies the answer s of a heartbeat sent at sent to a lead: its deadline, null to end it, undefined when s says nothing of it. */
function leadDeadline(s: Session, sent: number, election: string, term: number, since: number): number | null | undefined {
  // An answer to a heartbeat sent before the campaign may have been
  // answered before the campaign: not naming the candidacy, it says nothing.
  if (!s.candidates.some((c) => c.election === election) && sent < since) return undefined;
  return sessionStepDownDeadline(s, election, term, sent) ?? null;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * SessionLead is the leadership of one of a kept session's candidacies, as
 * SessionKeeper.lead gives it: act while `active`, stop when `signal`
 * aborts. The signal's reason is a LeadershipLostError: "heartbeat-timeout"
 * at the step-down deadline, "lost" once an answer shows the candidacy no
 * longer leading with `term`, "session-ended" when the keeper ends (its
 * cause says why), "cancelled" after cancel() or the signal given to
 * lead().
 */
export class SessionLead extends Leadership {
  /** The election it leads. */
  readonly election: string;
  /** When the request whose answer showed it leading was sent, on the keeper's clock. */
  readonly sent: number;

  /** @internal */
  constructor(election: string, term: number, sent: number, deadline: number, now: () => number, ended?: { reason: Reason; cause?: unknown }) {
    super(term, deadline, now, ended);
    this.election = election;
    this.sent = sent;
  }

  /** cancel stops following the leadership: its signal aborts with reason "cancelled". The candidacy itself is untouched. */
  cancel(reason?: unknown): void {
    this.end("cancelled", reason);
  }
}

/**
 * SessionKeeper is a session that keeps itself alive, as etcd's
 * concurrency.Session keeps its lease alive: keepSession opens it and
 * heartbeats it every TTL/3. campaign puts a candidacy in it; lead gives a
 * leader of one of its elections a SessionLead that ends when the
 * step-down rule says to stop acting. `await using` closes it.
 */
export class SessionKeeper {
  /** The session's id. */
  readonly id: string;
  /** The session's token: its calls and campaigns need it, and it is each of its candidacies' token. Keep it secret. */
  readonly token: string;
  /** The session's TTL, in milliseconds, as the gateway gave it. */
  readonly ttlMs: number;
  /** The step-down margin for that TTL, in milliseconds. */
  readonly marginMs: number;
  /** Resolves when the keeper has ended; signal.reason says why. It never rejects. */
  readonly done: Promise<void>;
  readonly #client: Client;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #ended = new AbortController();
  readonly #stop = new AbortController(); // ends the heartbeats
  #loop: Promise<void> | undefined;
  #resolveDone!: () => void;
  #last: Session; // the last heartbeat's answer, or the session as opened
  #sent: number;
  #next!: { promise: Promise<void>; resolve: () => void };
  readonly #leads = new Set<SessionLead>();

  /** @internal keepSession makes it, sent being when the opening was sent; start() begins the heartbeats. */
  constructor(client: Client, opened: OpenedSession, sent: number, options: { logger?: Logger; now: () => number }) {
    const { token, ...session } = opened;
    this.id = opened.id;
    this.token = token;
    this.ttlMs = parseDuration(opened.ttl);
    this.marginMs = stepDownMargin(this.ttlMs);
    this.#client = client;
    this.#log = options.logger ?? silentLogger;
    this.#now = options.now;
    this.#last = session;
    this.#sent = sent;
    this.#renewNext();
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    // Without a readable TTL no deadline can be set: end at once.
    if (!(this.ttlMs > 0)) this.#end(new Error(`elector: session ${opened.id}: unreadable ttl ${JSON.stringify(opened.ttl)}`));
  }

  /** signal aborts when the keeper has ended. Its reason says why: a SessionEndedError after close() or stop(), the reason of the signal given to keepSession, or the gateway's answer (SessionNotFoundError: the session expired while no heartbeat got through, or was closed elsewhere). */
  get signal(): AbortSignal {
    return this.#ended.signal;
  }

  /** last gives the answer of the last heartbeat that got through (the session as opened before the first), when it was sent, and a promise of the next. A candidacy it shows leading with a term may act as leader under lead(election, term, sent). */
  last(): SessionAnswer {
    return { session: this.#last, sent: this.#sent, next: this.#next.promise };
  }

  /**
   * campaign campaigns in election in the session (req.session is the
   * keeper's; req.ttl is left out, the session's candidacies living by its
   * TTL) and returns the answer with when it was sent: a leader acts under
   * lead(election, status.term, sent).
   *
   * Errors: those of Client.campaign.
   */
  async campaign(election: string, req: Omit<CampaignRequest, "session" | "ttl">, options?: CallOptions): Promise<SessionCampaign> {
    const { ttl: _ttl, session: _session, ...rest } = req as CampaignRequest;
    const sent = this.#now();
    const status = await this.#client.campaign(election, { ...rest, session: { id: this.id, token: this.token } }, options);
    return { status, sent };
  }

  /**
   * lead follows the leadership of the session's candidacy in election
   * with term, given that the answer to a request sent at sent (on the
   * keeper's clock: campaign() or last() gives it) showed it leading: its
   * campaign, or a heartbeat of the session. The lead ends when
   * options.signal aborts, and as its doc says.
   *
   * Its step-down deadline is that of the newest answer that names the
   * candidacy (sessionStepDownDeadline), and before any, the last
   * renewal's: when the last heartbeat that got through, or the opening,
   * was sent, plus the TTL, minus the margin. A campaign does not move a
   * session's expiry. An answer that does not name the candidacy ends it,
   * but for one to a heartbeat sent before sent, which the gateway may have
   * answered before the campaign.
   */
  lead(election: string, term: number, sent: number, options: { signal?: AbortSignal } = {}): SessionLead {
    const renewed = this.#sent + this.ttlMs - this.marginMs;
    if (this.#ended.signal.aborted) {
      return new SessionLead(election, term, sent, renewed, this.#now, { reason: "session-ended", cause: this.#ended.signal.reason });
    }
    const d = leadDeadline(this.#last, this.#sent, election, term, sent);
    if (d === null) return new SessionLead(election, term, sent, renewed, this.#now, { reason: "lost" });
    const l = new SessionLead(election, term, sent, d ?? renewed, this.#now); // ends at once if that deadline has passed
    if (l.signal.aborted) return l;
    const user = options.signal;
    const cancel = () => l.cancel(user?.reason);
    this.#leads.add(l);
    l.signal.addEventListener(
      "abort",
      () => {
        this.#leads.delete(l);
        user?.removeEventListener("abort", cancel);
      },
      { once: true },
    );
    user?.addEventListener("abort", cancel, { once: true });
    if (user?.aborted) cancel();
    return l;
  }

  /** @internal start begins the heartbeats; signal ends them. */
  start(signal?: AbortSignal): void {
    if (this.#loop || this.#ended.signal.aborted) return;
    const onAbort = () => this.#stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    this.#loop = this.#run().finally(() => signal?.removeEventListener("abort", onAbort));
  }

  /**
   * #run heartbeats every TTL/3 from the last heartbeat sent, and again
   * after a pause of TTL/10 (at most a second) while they fail, until the
   * heartbeats are stopped or the gateway says the session is gone.
   */
  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    const interval = this.ttlMs / 3;
    const retry = Math.min(this.ttlMs / 10, 1000);
    let failures = 0;
    let wait = interval;
    while (await sleep(wait, stop)) {
      const sent = this.#now();
      let s: Session;
      try {
        s = await this.#client.heartbeatSession(this.id, this.token, { signal: stop, timeoutMs: interval });
      } catch (err) {
        if (stop.aborted) break;
        if (err instanceof SessionNotFoundError || err instanceof SessionTokenMismatchError || err instanceof SessionTokenMissingError) {
          this.#log.warn("session ended", { session: this.id, err: errText(err) });
          this.#end(err);
          return;
        }
        failures++;
        const fields = { session: this.id, failures, retry_in_ms: retry, err: errText(err) };
        if (failures === 1) this.#log.warn("session heartbeat failed; retrying", fields);
        else this.#log.debug("session heartbeat failed; retrying", fields);
        wait = retry;
        continue;
      }
      if (failures > 0) this.#log.info("the gateway answers the session's heartbeats again", { session: this.id, failures });
      failures = 0;
      this.answered(s, sent);
      wait = sent + interval - this.#now();
    }
    this.#end(stop.reason);
  }

  /** @internal answered records the answer s of a heartbeat sent at sent, the newest yet (one heartbeat at a time), and applies it to every lead. */
  answered(s: Session, sent: number): void {
    if (this.#ended.signal.aborted) return;
    this.#last = s;
    this.#sent = sent;
    for (const l of [...this.#leads]) {
      const d = leadDeadline(s, sent, l.election, l.term, l.sent);
      if (d === null) l.end("lost");
      else if (d !== undefined) l.extend(d); // earlier too: a leader asked to hand over is not renewed
    }
    const next = this.#next;
    this.#renewNext();
    next.resolve();
  }

  #renewNext(): void {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#next = { promise, resolve };
  }

  /** #end ends the keeper with reason, once: every lead first. */
  #end(reason: unknown): void {
    if (this.#ended.signal.aborted) return;
    for (const l of [...this.#leads]) l.end("session-ended", reason);
    this.#leads.clear();
    this.#ended.abort(reason);
    this.#next.resolve();
    this.#resolveDone();
  }

  /** #halt stops the heartbeats, ends the keeper with reason unless it has ended, and resolves once the heartbeats have stopped. */
  async #halt(reason: SessionEndedError): Promise<void> {
    this.#stop.abort(reason);
    await this.#loop;
    this.#end(reason);
  }

  /** stop stops the heartbeats and every lead ("session-ended"); the session expires by its TTL. It resolves once the heartbeats have stopped. */
  stop(): Promise<void> {
    return this.#halt(new SessionEndedError("elector: session keeper stopped"));
  }

  /**
   * close ends every lead ("session-ended") first, stops the heartbeats and
   * closes the session: each of its candidacies resigns, a leader handing
   * over at once. A session already gone is not an error. The close is
   * bounded by options, and by the TTL by default: the session expires
   * then anyway.
   *
   * Errors: those of Client.closeSession.
   */
  async close(options?: CallOptions): Promise<void> {
    const closed = new SessionEndedError("elector: session keeper closed");
    this.#end(closed);
    await this.#halt(closed);
    try {
      await this.#client.closeSession(this.id, this.token, { ...options, timeoutMs: options?.timeoutMs ?? this.ttlMs });
    } catch (err) {
      if (!(err instanceof SessionNotFoundError)) throw err;
    }
  }

  /** `await using keeper = await keepSession(…)` closes it at the end of the block, where the platform has Symbol.asyncDispose. */
  declare [Symbol.asyncDispose]: () => Promise<void>;
}

const asyncDispose = (Symbol as { asyncDispose?: symbol }).asyncDispose;
if (typeof asyncDispose === "symbol") {
  Object.defineProperty(SessionKeeper.prototype, asyncDispose, {
    value: function (this: SessionKeeper) {
      return this.close();
    },
    writable: true,
    configurable: true,
  });
}
