// The loop of a Candidacy. It owns the candidacy's state; reportError and
// handover are requests it serves between heartbeats, so that no
// heartbeat answer from before a request is acted on after it.
//
// Why two leaders cannot act at once, from this side: a Leadership begins
// only on an answer of the gateway saying this candidate leads, to a
// request sent less than TTL minus the margin ago, and it ends (its signal
// aborts, its active getter turns false) at TTL minus the margin after the
// send time of the last successful heartbeat. The gateway counts the TTL
// from when it received that heartbeat, which is later, so this leader
// stops before the gateway can promote anyone else, whatever it hears or
// fails to hear meanwhile.

import { retryDelay, Scope, sleep, Waker } from "./backoff.js";
import { MAX_RETRY_DELAY_MS, stepDownMargin, type CandidacyConfig, type Standing } from "./candidacy-config.js";
import { StreamFollower } from "./candidacy-stream.js";
import type { Client } from "./client.js";
import {
  CandidateExistsError,
  CandidateNotFoundError,
  ElectionNotFoundError,
  ForbiddenError,
  InvalidRequestError,
  NoTransferPendingError,
  NotLeaderError,
  NotRunningError,
  ProblemError,
  TokenMismatchError,
  TransferPendingError,
  UnauthenticatedError,
} from "./errors.js";
import { Dispatcher, Leadership, type Reason } from "./leadership.js";
import type { CandidateStatus } from "./types.js";

/** LEADER_RETRY_FLOOR_MS is the shortest wait between a leader's tries. */
const LEADER_RETRY_FLOOR_MS = 100;

/** A reportError or handover, and where to answer. */
interface LoopRequest {
  kind: "error" | "handover";
  reason: string;
  resolve?: () => void;
  reject?: (err: unknown) => void;
}

/** failsOver reports whether another gateway may answer where this one failed: a transport error or a 5xx answer. */
function failsOver(err: unknown): boolean {
  return !(err instanceof ProblemError) || err.status >= 500;
}

/** permanent reports whether a campaign that failed with err will keep failing: the request or the credentials are wrong. */
function permanent(err: unknown): boolean {
  return err instanceof InvalidRequestError || err instanceof UnauthenticatedError || err instanceof ForbiddenError;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** @internal CandidacyLoop is the state and the loop behind a Candidacy. */
export class CandidacyLoop {
  readonly #cfg: CandidacyConfig;
  readonly #clients: Client[];
  readonly #log: CandidacyConfig["logger"];
  readonly #now: () => number;
  readonly #interval: number;
  readonly #margin: number;

  #running = false;
  readonly #stop = new AbortController();
  readonly #waker = new Waker();
  #poked = false;
  readonly #requests: LoopRequest[] = [];
  #gw = 0;
  readonly #stream: StreamFollower;
  #standing: Standing = { leading: false, state: "", term: 0, leader: "", since: 0, reason: "" };
  readonly #callbacks: Dispatcher;

  // Owned by the loop.
  #token = "";
  #leading = false;
  #term = 0;
  #sentOK = 0; // when the last successful heartbeat (or campaign) was sent
  #pauseUntil = 0; // the error timeout: no leadership until then
  #failures = 0; // requests failed in a row
  #leadership: Leadership | undefined;

  constructor(cfg: CandidacyConfig, clients: Client[]) {
    this.#cfg = cfg;
    this.#clients = clients;
    this.#log = cfg.logger;
    this.#now = cfg.now;
    this.#interval = cfg.ttlMs / 3;
    this.#margin = stepDownMargin(cfg.ttlMs);
    this.#callbacks = new Dispatcher(cfg.logger);
    this.#stream = new StreamFollower(
      cfg,
      () => this.#clients[this.#gw],
      () => {
        this.#poked = true;
        this.#waker.wake();
      },
    );
  }

  get running(): boolean {
    return this.#running;
  }

  get standing(): Standing {
    return this.#standing;
  }

  get leadership(): Leadership | undefined {
    return this.#leading ? this.#leadership : undefined;
  }

  get lastOK(): number {
    return this.#sentOK;
  }

  /** client is the client of the gateway in use. */
  get client(): Client {
    return this.#clients[this.#gw];
  }

  /** run campaigns and heartbeats until halt or signal, then stops leading, resigns and waits for the callbacks. */
  async run(signal: AbortSignal | undefined): Promise<void> {
    this.#running = true;
    const stop = this.#stop.signal;
    const onAbort = () => this.halt();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) this.halt();
    const watching = this.#stream.run(stop, this.#retryBase());
    let failure: unknown;
    try {
      await this.#loop(stop);
    } catch (err) {
      failure = err;
    }
    this.halt();
    await watching;
    this.#lose("resigned");
    if (!this.#cfg.keepOnExit) await this.#resign(undefined);
    await this.#callbacks.drained();
    this.#running = false;
    for (const r of this.#requests.splice(0)) r.reject?.(new NotRunningError());
    signal?.removeEventListener("abort", onAbort);
    if (failure !== undefined) throw failure;
  }

  /** halt ends the loop: the request in flight is abandoned, and run's way out begins. */
  halt(): void {
    this.#stop.abort();
    this.#waker.wake();
    this.#stream.wake();
  }

  /** request asks the loop to serve r and resolves with its outcome. */
  request(r: LoopRequest): Promise<void> {
    if (!this.#running || this.#stop.signal.aborted) return Promise.reject(new NotRunningError());
    return new Promise((resolve, reject) => {
      this.#requests.push({ ...r, resolve, reject });
      this.#waker.wake();
    });
  }

  /** #stepDownAt is when a leader without a successful heartbeat must stop acting as leader. */
  #stepDownAt(): number {
    return this.#sentOK + this.#cfg.ttlMs - this.#margin;
  }

  /** #retryBase is the first wait after a failed request. */
  #retryBase(): number {
    return Math.min(this.#interval, Math.max(this.#cfg.ttlMs / 10, 100));
  }

  /** #callTimeout bounds one request: a heartbeat period, and never past the step-down deadline of a leader. */
  #callTimeout(): number {
    let d = this.#interval;
    if (this.#leading) d = Math.min(d, this.#stepDownAt() - this.#now());
    return d;
  }

  async #loop(stop: AbortSignal): Promise<void> {
    let next = this.#now();
    for (;;) {
      if (stop.aborted) return;
      let wake = next;
      if (this.#leading && this.#stepDownAt() < wake) wake = this.#stepDownAt();
      await this.#waker.sleep(wake - this.#now());
      if (stop.aborted) return;
      const r = this.#requests.shift();
      if (r) {
        try {
          await this.#serve(r, stop);
          r.resolve?.();
        } catch (err) {
          r.reject?.(err);
        }
        next = this.#now();
        continue;
      }
      if (this.#poked) {
        // The event stream says something happened to this candidate:
        // heartbeat now to hear what.
        this.#poked = false;
        next = this.#now();
      }
      this.#checkStepDown();
      if (this.#now() >= next) {
        const d = await this.#step(stop);
        next = this.#now() + d;
        this.#checkStepDown();
      }
    }
  }

  /** #checkStepDown applies the step-down rule. */
  #checkStepDown(): void {
    if (this.#leading && this.#now() >= this.#stepDownAt()) {
      this.#log.warn("no successful heartbeat for TTL minus the margin; stepping down", { term: this.#term, ttl_ms: this.#cfg.ttlMs, margin_ms: this.#margin });
      this.#lose("heartbeat-timeout");
    }
  }

  /** #step campaigns or heartbeats once and returns how long to wait before the next step; it throws what ends run. */
  async #step(stop: AbortSignal): Promise<number> {
    if (this.#token === "" && this.#now() < this.#pauseUntil) return this.#pauseUntil - this.#now();
    if (this.#token === "") return this.#campaign(stop);
    return this.#heartbeat(stop);
  }

  /**
   * #try calls f with the gateway in use and, while it fails in transport
   * or with a 5xx, with the next ones in turn; the gateway that answered is
   * used from then on.
   *
   * The gateway in use gets all of the call's time: a healthy one that is
   * slow for a moment (its backend stalls) still answers. When the time
   * runs out on one, the next request starts with the gateway after it, and
   * the event stream moves there: a gateway that takes requests and never
   * answers costs one request, not every request for as long as it hangs.
   * A leader keeps its leadership through that one: its heartbeats'
   * deadline is its step-down deadline at the latest, and the retry after a
   * failed heartbeat comes well before it.
   *
   * A request that timed out may still take effect where it was sent. A
   * heartbeat or resignation that does is harmless; a campaign that does
   * leaves a candidacy whose token this candidate never got: the next
   * campaign is answered candidate-exists, and the candidate waits for
   * that candidacy to expire.
   */
  async #try<T>(f: (cl: Client, signal: AbortSignal) => Promise<T>, timeoutMs: number, parent: AbortSignal | undefined): Promise<T> {
    const scope = new Scope(parent, timeoutMs);
    const start = this.#gw;
    const n = this.#clients.length;
    let failure: unknown;
    try {
      for (let i = 0; i < n; i++) {
        const idx = (start + i) % n;
        try {
          const out = await f(this.#clients[idx], scope.signal);
          if (idx !== start) this.#useGateway(idx);
          return out;
        } catch (err) {
          failure = err;
          if (!failsOver(err)) {
            if (idx !== start) this.#useGateway(idx);
            throw err;
          }
          if (scope.signal.aborted) {
            if (n > 1 && scope.timedOut) this.#useGateway((idx + 1) % n);
            throw err;
          }
        }
      }
      throw failure;
    } finally {
      scope.dispose();
    }
  }

  /** #useGateway makes gateway idx the one in use and moves the event stream there. */
  #useGateway(idx: number): void {
    this.#gw = idx;
    this.#log.info("switched gateway", { gateway: this.#clients[idx].baseUrl });
    this.#stream.move();
  }

  /**
   * #retry counts a failed request and returns the back-off before the
   * next. A leader waits at most half the time left until its step-down
   * deadline (and at least LEADER_RETRY_FLOOR_MS), so that it tries again
   * before the deadline if the gateways answer again in time.
   */
  #retry(what: string, err: unknown, stop: AbortSignal): number {
    this.#failures++;
    let limit = MAX_RETRY_DELAY_MS;
    if (this.#token !== "") limit = this.#interval;
    if (this.#leading) limit = Math.min(limit, Math.max((this.#stepDownAt() - this.#now()) / 2, LEADER_RETRY_FLOOR_MS));
    const retryAfter = err instanceof ProblemError ? err.retryAfterMs : 0;
    const d = retryDelay(this.#retryBase(), limit, this.#failures, retryAfter, this.#cfg.random());
    if (!stop.aborted) {
      const fields = { failures: this.#failures, retry_in_ms: Math.round(d), err: errText(err) };
      if (this.#failures === 1) this.#log.warn(`${what} failed; retrying with back-off`, fields);
      else this.#log.debug(`${what} failed; retrying with back-off`, fields);
    }
    return d;
  }

  /** #answered ends a series of failures. */
  #answered(): void {
    if (this.#failures > 0) {
      this.#log.info("the gateway answers again", { failures: this.#failures });
      this.#failures = 0;
    }
  }

  async #campaign(stop: AbortSignal): Promise<number> {
    const sent = this.#now();
    const { election, id, ttlMs: ttl, metadata, priority } = this.#cfg;
    let res;
    try {
      res = await this.#try((cl, signal) => cl.campaign(election, { id, ttl, metadata, priority }, { signal }), this.#callTimeout(), stop);
    } catch (err) {
      if (err instanceof CandidateExistsError) {
        this.#answered();
        this.#log.warn("a candidacy with this id is still alive (a previous run?); campaigning again when it expires", { err: errText(err) });
        return this.#interval;
      }
      if (permanent(err)) {
        this.#log.error("the gateway refuses the campaign", { err: errText(err) });
        throw err;
      }
      return this.#retry("campaign", err, stop);
    }
    const { token, webhook_secret: _secret, ...status } = res;
    this.#answered();
    this.#token = token;
    this.#sentOK = sent;
    this.#log.info("campaigned", { state: status.state, position: status.position });
    try {
      this.#cfg.onCampaigned?.(status);
    } catch (err) {
      this.#log.error("onCampaigned failed", { err: errText(err) });
    }
    await this.#act(status, stop);
    return this.#interval;
  }

  async #heartbeat(stop: AbortSignal): Promise<number> {
    const sent = this.#now();
    const { election, id } = this.#cfg;
    const token = this.#token;
    let st: CandidateStatus;
    try {
      st = await this.#try((cl, signal) => cl.heartbeat(election, id, token, { signal }), this.#callTimeout(), stop);
    } catch (err) {
      if (err instanceof CandidateNotFoundError || err instanceof TokenMismatchError || err instanceof ElectionNotFoundError) {
        this.#answered();
        this.#log.warn("candidacy lost (expired or resigned elsewhere); campaigning again", { err: errText(err) });
        this.#token = "";
        this.#lose("expired");
        this.#publish({ leading: false, state: "", term: this.#standing.term, leader: "", since: 0, reason: "expired" });
        return 0;
      }
      if (err instanceof TransferPendingError) {
        // Asked to hand over: the gateway no longer extends this
        // candidacy's life, so stop acting at once, whatever comes next.
        this.#answered();
        if (this.#leading) {
          this.#log.info("asked to hand over leadership; stopping", { term: this.#term });
          this.#lose("transferred");
        }
        if (this.#cfg.explicitHandover) return this.#interval; // the caller stops its work, then calls handover
        try {
          await this.#handover(stop);
        } catch (herr) {
          if (!(herr instanceof NoTransferPendingError) && !(herr instanceof NotLeaderError)) return this.#retry("handover", herr, stop);
        }
        return 0;
      }
      return this.#retry("heartbeat", err, stop);
    }
    this.#answered();
    this.#sentOK = sent;
    await this.#act(st, stop);
    return this.#interval;
  }

  /**
   * #handover ends a leadership the gateway asked this candidate to hand
   * over. It first waits for the leadership callbacks to settle (so the
   * caller's work has stopped before the target starts), but never past
   * the step-down deadline: after it the gateway may promote the target by
   * itself, and a handover would add nothing. NoTransferPendingError and
   * NotLeaderError mean the transfer was cancelled or completed meanwhile:
   * the next heartbeat says where the candidate stands.
   */
  async #handover(stop: AbortSignal): Promise<void> {
    this.#lose("transferred");
    const settled = await Promise.race([
      this.#callbacks.drained().then(() => true),
      sleep(this.#stepDownAt() - this.#now(), stop).then(() => false),
    ]);
    if (!settled) {
      if (!stop.aborted) this.#log.warn("the leadership callbacks did not settle by the step-down deadline; the transfer completes by the TTL instead");
      return;
    }
    const sent = this.#now();
    const { election, id } = this.#cfg;
    const token = this.#token;
    const st = await this.#try((cl, signal) => cl.handover(election, id, token, { signal }), this.#callTimeout(), stop);
    this.#log.info("handed over", { leader: st.leader?.id ?? "", term: st.term });
    this.#sentOK = sent;
    await this.#act(st, stop);
  }

  /** #act acts on a status from the gateway. */
  async #act(st: CandidateStatus, stop: AbortSignal): Promise<void> {
    const leader = st.leader?.id ?? "";
    const paused = this.#now() < this.#pauseUntil;
    if (st.state === "leader" && paused) {
      // The gateway's error cooldown ended before our error timeout: hand
      // over rather than lead.
      this.#log.info("promoted during the error timeout; resigning until it ends");
      await this.#resign(stop);
      return;
    } else if (st.state === "leader" && this.#now() >= this.#stepDownAt()) {
      // The answer came too late to act on: the step-down deadline it would
      // set has passed. The next heartbeat decides.
      this.#lose("heartbeat-timeout");
    } else if (st.state === "leader") {
      if (this.#leading && this.#term !== st.term) {
        // Another leadership than the one we act on: end it before
        // starting the one the gateway confirms.
        this.#lose("lost");
      } else if (this.#leading && !this.#leadership!.active) {
        // The step-down rule ended this leadership (the event loop was
        // blocked past its deadline): end it, then start afresh on the
        // gateway's confirmation.
        this.#lose("heartbeat-timeout");
      }
      if (this.#leading) {
        // Safe to extend: the gateway has just confirmed this term, and
        // counts our TTL from after the heartbeat was sent.
        this.#leadership!.extend(this.#stepDownAt());
      } else {
        this.#startLeading(st.term);
      }
    } else if (st.state === "error" && !paused && this.#pauseUntil !== 0) {
      // Our error timeout is over but the gateway's cooldown is not:
      // campaign again now, at the back of the line.
      this.#log.info("error timeout over; campaigning again");
      await this.#resign(stop);
      this.#pauseUntil = 0;
      return;
    } else if (st.state === "error") {
      this.#lose("error");
    } else {
      this.#lose("lost");
    }
    const reason = this.#leading ? "elected" : this.#standing.reason;
    this.#publish({ leading: this.#leading, state: st.state, term: st.term, leader, since: this.#leading ? this.#leadership!.since : 0, reason });
  }

  /**
   * #startLeading begins a leadership of term. The gateway has just said
   * this candidate leads, in answer to a request sent less than TTL minus
   * the margin ago; the leadership ends at that deadline unless a later
   * heartbeat extends it, so it never outlives what the gateway granted.
   */
  #startLeading(term: number): void {
    this.#leading = true;
    this.#term = term;
    const l = new Leadership(term, this.#stepDownAt(), this.#now);
    this.#leadership = l;
    this.#log.info("leading", { term });
    const f = this.#cfg.onStartedLeading;
    if (f) this.#callbacks.push("onStartedLeading", () => f(l));
    this.#publish({ leading: true, state: "leader", term, leader: this.#cfg.id, since: l.since, reason: "elected" });
  }

  /**
   * #lose ends the leadership, if any: its signal aborts before anything
   * else happens, then onStoppedLeading is queued and the standing
   * published. The reason is the one the signal carries, when the
   * step-down timer aborted it first.
   */
  #lose(reason: Reason): void {
    if (!this.#leading) return;
    this.#leading = false;
    const why = this.#leadership!.end(reason);
    const term = this.#term;
    this.#log.info("no longer leading", { term, reason: why });
    const f = this.#cfg.onStoppedLeading;
    if (f) this.#callbacks.push("onStoppedLeading", () => f(term, why));
    const st = { ...this.#standing, leading: false, since: 0, reason: why };
    if (st.leader === this.#cfg.id) st.leader = "";
    this.#publish(st);
  }

  /** #publish makes st the current standing and tells onStanding. */
  #publish(st: Standing): void {
    const c = this.#standing;
    if (c.leading === st.leading && c.state === st.state && c.term === st.term && c.leader === st.leader && c.since === st.since && c.reason === st.reason) return;
    this.#standing = st;
    try {
      this.#cfg.onStanding?.({ ...st });
    } catch (err) {
      this.#log.error("onStanding failed", { err: errText(err) });
    }
  }

  /**
   * #resign ends the current candidacy, bound to parent (none on the way
   * out of run); a failure is logged, and the candidacy then expires by
   * its TTL.
   */
  async #resign(parent: AbortSignal | undefined): Promise<void> {
    if (this.#token === "") return;
    const { election, id } = this.#cfg;
    const token = this.#token;
    try {
      await this.#try((cl, signal) => cl.resign(election, id, token, { signal }), Math.max(this.#interval, 1000), parent);
    } catch (err) {
      if (!(err instanceof CandidateNotFoundError)) this.#log.warn("resign failed; the candidacy will expire by its TTL", { err: errText(err) });
    }
    this.#token = "";
    this.#publish({ leading: false, state: "", term: this.#standing.term, leader: "", since: 0, reason: "resigned" });
  }

  /** #serve answers a reportError or handover request. */
  async #serve(r: LoopRequest, stop: AbortSignal): Promise<void> {
    if (r.kind === "handover") {
      if (this.#token === "") throw new NoTransferPendingError({ status: 409, title: "No leadership transfer pending", detail: "the candidate holds no candidacy" });
      return this.#handover(stop);
    }
    this.#lose("error");
    this.#pauseUntil = this.#now() + this.#cfg.errorTimeoutMs;
    if (this.#token === "") return;
    const { election, id } = this.#cfg;
    const token = this.#token;
    let st: CandidateStatus;
    try {
      st = await this.#try((cl, signal) => cl.reportError(election, id, token, r.reason, { signal }), Math.max(this.#interval, 1000), stop);
    } catch (err) {
      if (err instanceof CandidateNotFoundError) {
        this.#token = "";
        return;
      }
      // Without the report the gateway still sees a leader: give the
      // leadership up by resigning.
      await this.#resign(stop);
      throw err;
    }
    this.#publish({ leading: false, state: st.state, term: st.term, leader: st.leader?.id ?? "", since: 0, reason: "error" });
  }
}
