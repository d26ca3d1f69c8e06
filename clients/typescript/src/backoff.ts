// Waiting: the back-off between failed requests, and timers that end early
// when a signal aborts.

import { TimeoutError } from "./errors.js";

/**
 * retryDelay is the wait, in milliseconds, before retry number failures (1
 * for the first) of a request that failed: baseMs doubled per failure up to
 * limitMs, with equal jitter (half fixed, half scaled by jitter, a number
 * in [0, 1)) so that candidates cut off together do not come back in step,
 * and never shorter than the Retry-After the gateway asked for, up to
 * limitMs.
 */
export function retryDelay(baseMs: number, limitMs: number, failures: number, retryAfterMs: number, jitter: number): number {
  let d = baseMs;
  for (let i = 1; i < failures && d < limitMs; i++) d *= 2;
  d = Math.min(d, limitMs);
  d = d / 2 + (d / 2) * jitter;
  return Math.max(d, Math.min(retryAfterMs, limitMs));
}

let origin: number | undefined;

/**
 * monotonicNow is the time in milliseconds since the epoch: the wall clock
 * when it is first called, advanced since then by the monotonic clock
 * (performance.now), so that a step of the system clock (an NTP
 * correction, a manual change) cannot stretch or shorten a deadline.
 */
export function monotonicNow(): number {
  if (origin === undefined) origin = Date.now() - performance.now();
  return origin + performance.now();
}

/** sleep resolves true after ms, or false as soon as signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, Math.max(ms, 0));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Scope bounds one call: its signal aborts when parent aborts (with the
 * parent's reason) or when timeoutMs pass (with a TimeoutError, and
 * timedOut set). dispose detaches it from the parent and stops its timer.
 */
export class Scope {
  readonly #controller = new AbortController();
  readonly #parent: AbortSignal | undefined;
  #timer: unknown;
  #timedOut = false;

  constructor(parent?: AbortSignal, timeoutMs?: number) {
    this.#parent = parent;
    if (parent?.aborted) {
      this.#controller.abort(parent.reason);
      return;
    }
    parent?.addEventListener("abort", this.#onAbort, { once: true });
    if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
      this.#timer = setTimeout(() => {
        this.#timedOut = true;
        this.#controller.abort(new TimeoutError(`elector: no answer within ${Math.round(timeoutMs)}ms`));
      }, Math.max(timeoutMs, 0));
    }
  }

  readonly #onAbort = (): void => {
    clearTimeout(this.#timer);
    this.#controller.abort(this.#parent?.reason);
  };

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** cancel aborts the scope's signal itself. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#controller.abort();
  }

  /** timedOut reports whether the scope ended because its time ran out (not because the parent aborted). */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#parent?.removeEventListener("abort", this.#onAbort);
  }
}

/**
 * Waker lets one task sleep until a deadline or until it is woken. A wake
 * that comes while nobody sleeps is kept for the next sleep, so none is
 * lost.
 */
export class Waker {
  #pending = false;
  #wake: (() => void) | undefined;

  /** sleep resolves after ms, or when wake is called (or was called since the last sleep). */
  sleep(ms: number): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wake = undefined;
        resolve();
      }, Math.max(ms, 0));
      this.#wake = () => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
    });
  }

  wake(): void {
    if (this.#wake) this.#wake();
    else this.#pending = true;
  }

  /** clear forgets a wake that nobody has slept through yet. */
  clear(): void {
    this.#pending = false;
  }
}
