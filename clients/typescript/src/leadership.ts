// Leadership: what a leader holds while it leads (an AbortSignal, the
// term, the step-down deadline), and the queue that calls the leadership
// callbacks one after the other.

import type { Logger } from "./client.js";

/** Why a Candidacy's standing changed, as Standing.reason and onStoppedLeading say. */
export type Reason =
  /** A heartbeat (or the campaign) said it leads. */
  | "elected"
  /** A heartbeat said it no longer leads. */
  | "lost"
  /** The candidacy was gone (404): it campaigns again. */
  | "expired"
  /** The step-down rule: no successful heartbeat for TTL minus the margin. */
  | "heartbeat-timeout"
  /** reportError, or the gateway holds it in error. */
  | "error"
  /** close(), or the signal given to run() aborted. */
  | "resigned"
  /** The gateway asked the leader to hand over (a transfer or a preemption); it stopped acting, then handed over. */
  | "transferred"
  /** A SessionLead only: its SessionKeeper ended (closed, stopped, or its session gone); the error's cause says why. */
  | "session-ended"
  /** A SessionLead only: cancel(), or the signal given to lead() aborted; the candidacy itself is untouched. */
  | "cancelled";

/** LeadershipLostError is the reason of an aborted leadership signal; its cause, when it has one, is what ended it. */
export class LeadershipLostError extends Error {
  override name = "LeadershipLostError";
  readonly reason: Reason;
  readonly term: number;

  constructor(term: number, reason: Reason, options?: { cause?: unknown }) {
    super(`elector: leadership of term ${term} lost: ${reason}`, options);
    this.term = term;
    this.reason = reason;
  }
}

/**
 * Leadership is one leadership of a Candidacy: do the leader's work while
 * it is active, and pass its term to what you guard. Its signal aborts
 * (with a LeadershipLostError) the moment the leadership may be lost: at
 * the step-down deadline at the latest.
 *
 * A timer aborts the signal at the deadline; besides, `active` and
 * `throwIfLost` look at the clock themselves, so that a program whose
 * event loop was blocked (or whose process was paused) past the deadline
 * sees the leadership over at its first check, before any timer has run.
 */
export class Leadership {
  /** The fencing token of this leadership. */
  readonly term: number;
  /** When this leadership began, in milliseconds since the epoch. */
  readonly since: number;
  readonly #controller = new AbortController();
  readonly #now: () => number;
  #deadline: number;
  #timer: unknown;

  /** @internal ended gives a leadership that is over from the start, with that reason. */
  constructor(term: number, deadline: number, now: () => number, ended?: { reason: Reason; cause?: unknown }) {
    this.term = term;
    this.#now = now;
    this.since = now();
    this.#deadline = deadline;
    if (ended) this.end(ended.reason, ended.cause);
    else this.#arm();
  }

  /** signal aborts when the leadership may be lost, at the step-down deadline at the latest; its reason is a LeadershipLostError. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * deadline is the step-down deadline, in milliseconds since the epoch: the
   * last successful heartbeat's send time plus TTL minus the margin. It
   * moves later with each successful heartbeat (a SessionLead's moves
   * earlier too, for a leader asked to hand over).
   */
  get deadline(): number {
    return this.#deadline;
  }

  /** active says to act as leader: the signal has not aborted and the clock is before the deadline. */
  get active(): boolean {
    this.#check();
    return !this.#controller.signal.aborted;
  }

  /** throwIfLost throws the LeadershipLostError when the leadership is no longer active. */
  throwIfLost(): void {
    this.#check();
    this.#controller.signal.throwIfAborted();
  }

  /** @internal extend moves the deadline to d; the gateway has just confirmed the leadership. */
  extend(d: number): void {
    if (this.#controller.signal.aborted) return;
    this.#deadline = d;
    this.#arm();
  }

  /** @internal end aborts the signal with reason (and cause), unless it has already been aborted; it returns the reason the signal carries. */
  end(reason: Reason, cause?: unknown): Reason {
    clearTimeout(this.#timer);
    if (!this.#controller.signal.aborted) this.#controller.abort(new LeadershipLostError(this.term, reason, cause === undefined ? undefined : { cause }));
    return (this.#controller.signal.reason as LeadershipLostError).reason;
  }

  /** #check ends the leadership when the clock has passed the deadline, whether or not the timer has run. */
  #check(): void {
    if (!this.#controller.signal.aborted && this.#now() >= this.#deadline) this.end("heartbeat-timeout");
  }

  #arm(): void {
    clearTimeout(this.#timer);
    const wait = this.#deadline - this.#now();
    if (wait <= 0) {
      this.end("heartbeat-timeout");
      return;
    }
    // A timer may fire early by a fraction of a millisecond: check again.
    this.#timer = setTimeout(() => (this.#now() >= this.#deadline ? this.end("heartbeat-timeout") : this.#arm()), wait);
  }
}

/**
 * Dispatcher calls the leadership callbacks one after the other, in the
 * order they were queued, awaiting each one's promise, without ever
 * blocking the candidacy's loop: onStoppedLeading of a term runs after its
 * onStartedLeading has settled, and before the next onStartedLeading.
 */
export class Dispatcher {
  #tail: Promise<void> = Promise.resolve();
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** push queues f; what f throws or rejects with is logged. */
  push(what: string, f: () => unknown): void {
    this.#tail = this.#tail.then(async () => {
      try {
        await f();
      } catch (err) {
        this.#log.error(`${what} failed`, { err: String(err) });
      }
    });
  }

  /** drained resolves when every callback queued so far has settled. */
  drained(): Promise<void> {
    return this.#tail;
  }
}
