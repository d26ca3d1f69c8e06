// The event stream of a Candidacy: it follows the candidate's election
// through the gateway in use and pokes the loop when an event concerns the
// candidate.

import { retryDelay, Scope, Waker } from "./backoff.js";
import { MAX_RETRY_DELAY_MS, type CandidacyConfig } from "./candidacy-config.js";
import type { Client } from "./client.js";
import type { WatchEvent } from "./types.js";

/**
 * @internal StreamFollower pokes the candidacy's loop when an event
 * concerns its candidate, so that it heartbeats at once and learns from
 * the answer: a follower that the gateway has just promoted begins within
 * a round trip, not at its next heartbeat. The stream only hastens
 * heartbeats; what the candidate does is decided by their answers alone,
 * so a stale or forged event cannot make it lead.
 */
export class StreamFollower {
  readonly #cfg: CandidacyConfig;
  readonly #gateway: () => Client;
  readonly #poke: () => void;
  readonly #waker = new Waker();
  #scope: Scope | undefined;
  #moved = false;

  /** gateway returns the client of the gateway in use; poke asks the loop to heartbeat now. */
  constructor(cfg: CandidacyConfig, gateway: () => Client, poke: () => void) {
    this.#cfg = cfg;
    this.#gateway = gateway;
    this.#poke = poke;
  }

  /** run follows the stream until stop aborts, backing off from baseMs while it cannot. */
  async run(stop: AbortSignal, baseMs: number): Promise<void> {
    let failures = 0;
    while (!stop.aborted) {
      // The stream moves when the gateway in use changes, also while it
      // is still connecting: a gateway that hangs would hold it forever.
      const scope = new Scope(stop);
      this.#scope = scope;
      this.#moved = false;
      try {
        const events = await this.#gateway().watch(this.#cfg.election, { signal: scope.signal });
        failures = 0;
        for await (const ev of events) if (this.#concerns(ev)) this.#poke();
      } catch {
        if (!scope.signal.aborted) failures++;
      } finally {
        scope.dispose();
        this.#scope = undefined;
      }
      if (stop.aborted) return;
      if (this.#moved) {
        this.#waker.clear();
        continue; // to the new gateway at once
      }
      if (failures === 0) failures = 1; // a stream that ended: wait a little before the next
      await this.#waker.sleep(retryDelay(baseMs, MAX_RETRY_DELAY_MS, failures, 0, this.#cfg.random()));
    }
  }

  /** move ends the stream of the gateway that was in use; run opens one on the new gateway at once. */
  move(): void {
    this.#moved = true;
    this.#scope?.cancel();
    this.#waker.wake();
  }

  /** wake ends a back-off wait (for run to see its stop signal). */
  wake(): void {
    this.#waker.wake();
  }

  /** #concerns reports whether ev may change this candidate's standing. */
  #concerns(ev: WatchEvent): boolean {
    const id = this.#cfg.id;
    switch (ev.type) {
      case "reset":
        return ev.snapshot.leader?.id === id;
      case "leader.begin":
      case "leader.end":
      case "leader.error":
      case "candidate.left":
        return ev.data.candidate?.id === id;
      case "leader.transfer":
        // Asked to hand over: the next heartbeat is refused and says so.
        return ev.data.previous?.id === id;
    }
    return false;
  }
}
