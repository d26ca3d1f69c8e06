// Candidacy: campaigns, heartbeats, obeys the step-down rule and tells
// the program when it leads. The loop lives in candidacy-loop.ts.

import { monotonicNow } from "./backoff.js";
import {
  DEFAULT_CANDIDATE_TTL_MS,
  DEFAULT_ERROR_TIMEOUT_MS,
  stepDownMargin,
  type CandidacyConfig,
  type CandidacyOptions,
  type Standing,
} from "./candidacy-config.js";
import { CandidacyLoop } from "./candidacy-loop.js";
import { Client, silentLogger } from "./client.js";
import { InvalidConfigError } from "./errors.js";
import type { Leadership } from "./leadership.js";
import type { ObservedLeader } from "./types.js";

declare global {
  interface SymbolConstructor {
    /**
     * The method `await using` calls (Node ≥ 18.18, Deno, Bun, Workers),
     * declared here too for programs whose lib does not have it yet.
     */
    readonly asyncDispose: unique symbol;
  }
}

/**
 * Candidacy campaigns in an election and keeps its candidacy alive, as
 * etcd's concurrency.Election or client-go's leaderelection do: it
 * heartbeats every TTL/3, campaigns again when the candidacy is gone,
 * obeys the step-down rule, backs off with jitter while the gateway is
 * unreachable or asks it to (429, 503, Retry-After), tries the gateways in
 * turn, and learns that it leads from the election's event stream at
 * once, confirming with a heartbeat before it says so.
 *
 *     const candidacy = new Candidacy({ gateways: ["http://127.0.0.1:8080"], election: "billing", id: "node-a",
 *       onStartedLeading: (leadership) => runBilling(leadership.term, leadership.signal) });
 *     await candidacy.run(); // until close(): it stops leading, waits for the callbacks, and resigns
 */
export class Candidacy {
  /** The election it campaigns in. */
  readonly election: string;
  /** The candidate's id. */
  readonly id: string;
  /** The TTL, in milliseconds. */
  readonly ttlMs: number;
  /** The step-down margin for that TTL, in milliseconds. */
  readonly marginMs: number;
  readonly #loop: CandidacyLoop;
  #done: Promise<void> | undefined;
  /** close() came before run(): the one run() resolves at once. */
  #closedFirst = false;

  /** new Candidacy checks options; it throws InvalidConfigError naming what is wrong. Nothing happens until run(). */
  constructor(options: CandidacyOptions) {
    const cfg: CandidacyConfig = {
      ...options,
      ttlMs: options.ttlMs ?? DEFAULT_CANDIDATE_TTL_MS,
      errorTimeoutMs: options.errorTimeoutMs ?? DEFAULT_ERROR_TIMEOUT_MS,
      logger: options.logger ?? silentLogger,
      now: options.now ?? monotonicNow,
      random: options.random ?? Math.random,
    };
    const gateways = typeof cfg.gateways === "string" ? [cfg.gateways] : (cfg.gateways ?? []);
    if (gateways.length === 0) throw new InvalidConfigError("elector: gateways is empty; give the gateway's URL, such as http://127.0.0.1:8080");
    if (!cfg.election) throw new InvalidConfigError("elector: election is required");
    if (!cfg.id) throw new InvalidConfigError("elector: id is required");
    if (!(cfg.ttlMs >= 1000)) throw new InvalidConfigError(`elector: ttlMs ${cfg.ttlMs} is below 1000`);
    if (!(cfg.errorTimeoutMs >= 0)) throw new InvalidConfigError(`elector: errorTimeoutMs ${cfg.errorTimeoutMs} is negative`);
    const clients = gateways.map((g) => new Client(g, cfg.clientOptions));
    this.election = cfg.election;
    this.id = cfg.id;
    this.ttlMs = cfg.ttlMs;
    this.marginMs = stepDownMargin(cfg.ttlMs);
    this.#loop = new CandidacyLoop(cfg, clients);
  }

  /**
   * run campaigns and keeps the candidacy alive until close() is called or
   * options.signal aborts; then a leader stops leading, the callbacks
   * settle, and the candidacy is resigned (unless keepOnExit), so that the
   * next candidate leads at once. It resolves after that, and rejects for
   * an answer the gateway will keep giving (InvalidRequestError for a bad
   * election name, id or metadata; UnauthenticatedError; ForbiddenError).
   * A Candidacy runs once. After a close() that came first it resolves at
   * once, having sent nothing to the gateway.
   */
  run(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closedFirst) {
      this.#closedFirst = false;
      return Promise.resolve();
    }
    if (this.#done) return Promise.reject(new Error("elector: a Candidacy runs once; make a new one"));
    const run = this.#loop.run(options.signal);
    this.#done = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  /**
   * close stops the candidacy: a leader stops leading (its signal aborts
   * with reason "resigned"), the candidacy is resigned (unless keepOnExit)
   * and close resolves once the callbacks have settled. Closing a
   * candidacy before run() ends it before it begins: run() then resolves at
   * once without campaigning. Closing one that has stopped does nothing.
   */
  async close(): Promise<void> {
    if (!this.#done) {
      this.#done = Promise.resolve();
      this.#closedFirst = true;
      return;
    }
    this.#loop.halt();
    await this.#done;
  }

  /**
   * reportError tells the gateway that this candidate cannot lead (its work
   * failed to start, say): it stops leading, the gateway hands over to the
   * next in line, and after errorTimeoutMs the candidate campaigns again at
   * the back of the line. reason is shown in the leader.error event; it
   * must not carry secrets.
   *
   * Errors: NotRunningError, or the report's error (the candidacy was then
   * resigned instead, which hands over as well).
   */
  reportError(reason = ""): Promise<void> {
    return this.#loop.request({ kind: "error", reason });
  }

  /**
   * handover hands the leadership over to the target of the pending
   * transfer, for a candidacy with explicitHandover: call it once the
   * leader's work has stopped, after the leadership ended with reason
   * "transferred". The candidate stays in line as a follower.
   *
   * Errors: NotRunningError, NoTransferPendingError or NotLeaderError (the
   * transfer was cancelled or completed meanwhile), the request's error.
   */
  handover(): Promise<void> {
    return this.#loop.request({ kind: "handover", reason: "" });
  }

  /** standing is where the candidacy stands now. */
  get standing(): Standing {
    return { ...this.#loop.standing };
  }

  /** leadership is the current leadership while leading, else undefined. Check its active getter before acting. */
  get leadership(): Leadership | undefined {
    return this.#loop.leadership;
  }

  /** lastHeartbeat is when the last successful heartbeat (or campaign) was sent, in milliseconds since the epoch, or 0. */
  get lastHeartbeat(): number {
    return this.#loop.lastOK;
  }

  /** running reports whether run() is running. */
  get running(): boolean {
    return this.#loop.running;
  }

  /** observe follows the leader of the candidacy's election through the gateway in use; see Client.observe. */
  observe(options: { signal?: AbortSignal } = {}): Promise<AsyncIterable<ObservedLeader>> {
    return this.#loop.client.observe(this.election, options);
  }

  /** `await using candidacy = new Candidacy(…)` closes it at the end of the block, where the platform has Symbol.asyncDispose. */
  declare [Symbol.asyncDispose]: () => Promise<void>;
}

const asyncDispose = (Symbol as { asyncDispose?: symbol }).asyncDispose;
if (typeof asyncDispose === "symbol") {
  Object.defineProperty(Candidacy.prototype, asyncDispose, {
    value: function (this: Candidacy) {
      return this.close();
    },
    writable: true,
    configurable: true,
  });
}
