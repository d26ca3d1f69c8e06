// Watch: an election's events over a streamed SSE parser on fetch,
// reconnecting and resuming with Last-Event-ID; observe on top of it.

import { Scope, sleep } from "./backoff.js";
import { MAX_RECONNECT_DELAY_MS, type Client } from "./client.js";
import { ProblemError } from "./errors.js";
import { SSEParser, type SSEFrame } from "./sse.js";
import type { EventData, ObservedLeader, Snapshot, TransitionType, WatchEvent } from "./types.js";

/** Options of Client.watch. */
export interface WatchOptions {
  /** Resume after this event id; without one, the stream starts with a reset snapshot. */
  lastEventId?: string;
  /** Ends the watch: iteration stops (without an error) when it aborts. */
  signal?: AbortSignal;
}

/** decodeEvent reads the payload of a frame; it throws when it is not an event. */
export function decodeEvent(frame: SSEFrame): WatchEvent {
  const p = JSON.parse(frame.data) as { type?: unknown; timestamp?: unknown; data?: unknown };
  if (p === null || typeof p !== "object" || p.data === null || typeof p.data !== "object") {
    throw new Error(`elector: event ${JSON.stringify(frame.event)} has no data object`);
  }
  const type = typeof p.type === "string" && p.type !== "" ? p.type : frame.event;
  const id = frame.hasId ? frame.id : "";
  const timestamp = typeof p.timestamp === "string" ? p.timestamp : "";
  if (type === "reset") return { id, type: "reset", timestamp, snapshot: p.data as Snapshot };
  return { id, type: type as TransitionType, timestamp, data: p.data as EventData };
}

/** One connection of a watch: its answer and its scope. */
interface Connection {
  res: Response;
  scope: Scope;
}

/**
 * EventStream is a watch: an async iterable of the events of one election
 * (or of all), which reconnects by itself. Iterate it once.
 */
export class EventStream implements AsyncIterable<WatchEvent> {
  readonly #client: Client;
  readonly #election: string;
  readonly #signal: AbortSignal | undefined;
  #lastId: string;
  #delayMs: number;
  #first: Connection | undefined;
  #iterated = false;

  /** @internal */
  constructor(client: Client, election: string, options: WatchOptions) {
    this.#client = client;
    this.#election = election;
    this.#signal = options.signal;
    this.#lastId = options.lastEventId ?? "";
    this.#delayMs = client.reconnectDelayMs;
  }

  /** lastEventId is the id of the last event delivered (or given to start from): persist it to resume later. */
  get lastEventId(): string {
    return this.#lastId;
  }

  /** @internal open makes the first connection. */
  async open(): Promise<void> {
    this.#first = await this.#connect();
  }

  /**
   * #connect opens a connection from the last id. Each connection has a
   * scope of its own under the watch's signal, disposed when it ends, so
   * that a long watch leaves no listener behind per reconnection.
   */
  async #connect(): Promise<Connection> {
    const scope = new Scope(this.#signal);
    try {
      return { res: await this.#client.stream(this.#election, this.#lastId, scope.signal), scope };
    } catch (err) {
      scope.dispose();
      throw err;
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    if (this.#iterated) throw new Error("elector: an EventStream is iterated once");
    this.#iterated = true;
    return this.#run();
  }

  async *#run(): AsyncGenerator<WatchEvent, void, undefined> {
    let conn = this.#first;
    this.#first = undefined;
    let failures = 0;
    const log = this.#client.logger;
    for (;;) {
      if (conn) {
        failures = 0;
        try {
          yield* this.#read(conn);
        } catch (err) {
          if (this.#signal?.aborted) return;
          log.debug("event stream broke; reconnecting", { election: this.#election, last_event_id: this.#lastId, err: String(err) });
        }
        conn = undefined;
        if (this.#signal?.aborted) return;
      }
      let wait = this.#delayMs;
      for (let i = 0; i < Math.min(failures, 5); i++) wait *= 2;
      wait = Math.min(wait, Math.max(MAX_RECONNECT_DELAY_MS, this.#delayMs));
      if (!(await sleep(wait, this.#signal))) return;
      try {
        conn = await this.#connect();
      } catch (err) {
        if (this.#signal?.aborted) return;
        if (err instanceof ProblemError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          log.warn("event stream refused; the watch ends", { election: this.#election, err: err.message });
          throw err;
        }
        failures++;
      }
    }
  }

  /**
   * #read delivers the events of one connection until it ends, or until it
   * stays silent for the client's watchIdleTimeoutMs, which cancels it
   * (and throws, for #run to reconnect).
   */
  async *#read({ res, scope }: Connection): AsyncGenerator<WatchEvent, void, undefined> {
    if (!res.body) {
      scope.dispose();
      return;
    }
    const reader = res.body.getReader();
    const parser = new SSEParser(this.#lastId);
    const idleMs = this.#client.watchIdleTimeoutMs;
    let idled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (): void => {
      if (idleMs <= 0) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        idled = true;
        reader.cancel().catch(() => {});
      }, idleMs);
    };
    try {
      arm();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          if (idled) throw new Error(`elector: the event stream was silent for ${idleMs} ms`);
          return;
        }
        arm();
        const frames = value ? parser.push(value) : [];
        if (parser.retryMs > 0) this.#delayMs = parser.retryMs;
        for (const frame of frames) {
          let ev: WatchEvent;
          try {
            ev = decodeEvent(frame);
          } catch (err) {
            // Move the cursor even past an event that does not decode, so
            // that a reconnection does not fetch it again forever.
            this.#lastId = frame.id;
            this.#client.logger.warn("skipping an event that does not decode", { err: String(err) });
            continue;
          }
          this.#lastId = frame.id;
          // A consumer that takes its time is no silence of the stream.
          clearTimeout(timer);
          yield ev;
          arm();
        }
        // Ids of messages without data move the cursor too.
        this.#lastId = parser.lastId;
      }
    } finally {
      clearTimeout(timer);
      reader.cancel().catch(() => {});
      scope.dispose();
    }
  }
}

/** leaderOf is the leader after ev, for the events that say. */
function leaderOf(election: string, ev: WatchEvent): ObservedLeader | undefined {
  switch (ev.type) {
    case "reset": {
      const l = ev.snapshot.leader;
      if (!l) return { election, id: "", term: ev.snapshot.term };
      return { election, id: l.id, term: l.term, metadata: l.metadata, since: l.since };
    }
    case "leader.begin":
      return { election, id: ev.data.candidate?.id ?? "", term: ev.data.term, metadata: ev.data.candidate?.metadata, since: ev.timestamp };
    case "leader.end":
      return { election, id: "", term: ev.data.term };
  }
  return undefined;
}

/** observeLeaders turns a watch into who leads, skipping repeats. */
export async function* observeLeaders(election: string, events: AsyncIterable<WatchEvent>): AsyncGenerator<ObservedLeader, void, undefined> {
  let last: ObservedLeader | undefined;
  for await (const ev of events) {
    const l = leaderOf(election, ev);
    if (!l) continue;
    if (last && l.id === last.id && l.term === last.term) continue;
    last = l;
    yield l;
  }
}
