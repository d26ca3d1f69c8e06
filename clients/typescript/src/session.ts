// The step-down rule for the candidacies of a session.

import { stepDownMargin } from "./candidacy-config.js";
import type { Session } from "./types.js";

/** @internal parseDuration reads a Go duration string ("10s", "1m30s", "1.5s", "500ms") as milliseconds; NaN for anything else. */
export function parseDuration(s: string): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (s === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let total = 0;
  let m: RegExpExecArray | null;
  while (re.lastIndex < s.length && (m = re.exec(s)) !== null) total += Number(m[1]) * units[m[2]];
  return re.lastIndex === s.length && s !== "" ? total : NaN;
}

/**
 * sessionStepDownDeadline applies the step-down rule to the session's
 * candidacy in election, session being the answer of a heartbeat sent at
 * sentMs (milliseconds on any clock of this process, such as Date.now()
 * or performance.now()), for a leader of that election that leads with
 * term (the term its campaign, or the last answer, gave it). undefined
 * unless the candidacy is "leader" with that very term; then the moment,
 * on that clock, by which the leader must stop acting unless a later
 * heartbeat renews it: sentMs plus what the heartbeat gave the candidacy
 * (the session's TTL, less for a leader asked to hand over, which a
 * heartbeat does not renew) minus stepDownMargin of the TTL. Only the
 * gateway's times are compared with each other, so the two clocks need
 * not agree.
 *
 * A leader must stop acting at once when it returns undefined: the
 * session has no candidacy in election, or the gateway deposed it (a
 * follower or in error, though the heartbeat renewed it), or it leads
 * with another term (it lost the leadership and won it again, so what it
 * did under term is fenced off); or the answer's ttl or expires_at cannot
 * be read.
 */
export function sessionStepDownDeadline(session: Session, election: string, term: number, sentMs: number): number | undefined {
  const c = session.candidates.find((x) => x.election === election);
  if (c === undefined || c.state !== "leader" || c.term !== term) return undefined;
  const ttl = parseDuration(session.ttl);
  // The session's expiry is the heartbeat's start on the gateway's clock
  // plus the TTL; the candidacy's is at most that.
  const began = Date.parse(session.expires_at) - ttl;
  const given = Math.min(Date.parse(c.expires_at) - began, ttl);
  const deadline = sentMs + given - stepDownMargin(ttl);
  // An answer whose times cannot be read proves no renewal.
  return Number.isFinite(deadline) ? deadline : undefined;
}
