// The options of a Candidacy, its standing, and the numbers of the
// step-down rule.

import type { ClientOptions, Logger } from "./client.js";
import type { Leadership, Reason } from "./leadership.js";
import type { CandidateStatus, Metadata, State } from "./types.js";

/** DEFAULT_CANDIDATE_TTL_MS: how long a candidacy lives without a heartbeat, unless ttlMs says otherwise. */
export const DEFAULT_CANDIDATE_TTL_MS = 10_000;
/** DEFAULT_ERROR_TIMEOUT_MS: how long a candidate sits out after reportError, unless errorTimeoutMs says otherwise. */
export const DEFAULT_ERROR_TIMEOUT_MS = 10_000;
/**
 * MAX_RETRY_DELAY_MS caps the back-off of a candidate whose campaigns fail
 * (the gateway is unreachable, say). A candidate that holds a candidacy
 * retries at least every TTL/3, so that a short outage does not cost it
 * its place in line.
 */
export const MAX_RETRY_DELAY_MS = 30_000;

/**
 * stepDownMargin is how long before its TTL runs out, counted from when
 * its last successful heartbeat was sent, a leader stops acting as leader:
 * the larger of TTL/10 and 500 ms.
 */
export function stepDownMargin(ttlMs: number): number {
  return Math.max(ttlMs / 10, 500);
}

/** Options of a Candidacy. */
export interface CandidacyOptions {
  /**
   * The URLs of the gateway's replicas (or of one load balancer in front of
   * them). A request that fails in transport or with a 5xx answer is sent
   * to the next one at once; the one that answered is used from then on,
   * and the event stream moves there too. A request that one leaves
   * unanswered until its deadline fails, and the next request starts with
   * the next gateway. Required.
   */
  gateways: string | string[];
  /** The election to campaign in. Required. */
  election: string;
  /** Names this candidate; unique in the election (a host name fits). Required. */
  id: string;
  /** How long the candidacy lives without a heartbeat, at least 1000; heartbeats go every TTL/3. Default DEFAULT_CANDIDATE_TTL_MS. */
  ttlMs?: number;
  /** A small JSON object shown with the candidate. */
  metadata?: Metadata;
  /** Orders the line, higher first; 0 by default. */
  priority?: number;
  /** Options of the client of each gateway: apiToken, fetch, userAgent. */
  clientOptions?: ClientOptions;
  /** How long the candidate sits out after reportError before it campaigns again, at the back of the line. Default DEFAULT_ERROR_TIMEOUT_MS. */
  errorTimeoutMs?: number;
  /**
   * Leaves the handover of a transfer to the caller. When the gateway asks
   * this leader to hand over, the leadership ends at once (reason
   * "transferred") either way; by default the candidacy then waits for
   * the callbacks to settle and hands over itself. With explicitHandover
   * the caller stops its work and then calls handover(). Default false.
   */
  explicitHandover?: boolean;
  /**
   * Leaves the candidacy to expire by its TTL when it is closed, instead of
   * resigning it. Default false: close() resigns, so that the next
   * candidate leads at once.
   */
  keepOnExit?: boolean;
  /**
   * Called when this candidate starts leading, once the gateway has
   * confirmed it with a heartbeat. Do the leader's work while
   * leadership.active, stop when leadership.signal aborts (at the
   * step-down deadline at the latest), and pass leadership.term to what you
   * guard. If it returns a promise, onStoppedLeading waits for it.
   */
  onStartedLeading?: (leadership: Leadership) => unknown;
  /** Called after a leadership ended and its onStartedLeading settled, with the term and why. Callbacks never overlap and come in order. */
  onStoppedLeading?: (term: number, reason: Reason) => unknown;
  /** Called, in the candidacy's loop, each time its standing changes; keep it short. */
  onStanding?: (standing: Standing) => void;
  /** Called after each successful campaign (the first, and again after an expiry), with the candidate's status. */
  onCampaigned?: (status: CandidateStatus) => void;
  /** Receives the candidacy's transitions and failures; console fits. Default: silent. */
  logger?: Logger;
  /**
   * The clock, in milliseconds since the epoch. Default: the wall clock
   * when first read, advanced by the monotonic clock, so that a step of the
   * system clock cannot stretch a leadership. Tests move it.
   */
  now?: () => number;
  /** Jitter of the back-off, a number in [0, 1). Default Math.random. */
  random?: () => number;
}

/** Where a Candidacy stands. */
export interface Standing {
  /**
   * Leading as the candidacy's loop last saw it: the gateway confirmed it
   * with a heartbeat, and the step-down deadline had not passed. Before
   * acting, check the Leadership's active getter, which looks at the clock.
   */
  leading: boolean;
  /** The candidate's state at the gateway as last heard, or "" while it holds no candidacy. */
  state: State | "";
  /** The leadership's term while leading, else the last term heard of. */
  term: number;
  /** The current leader's id as last heard, "" when none or unknown. */
  leader: string;
  /** When the current leadership began (while leading), in milliseconds since the epoch; else 0. */
  since: number;
  /** Why the standing changed. */
  reason: Reason | "";
}

/** The validated options: defaults filled in. */
export interface CandidacyConfig extends CandidacyOptions {
  ttlMs: number;
  errorTimeoutMs: number;
  logger: Logger;
  now: () => number;
  random: () => number;
}
