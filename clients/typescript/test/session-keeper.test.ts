// The session keeper: against a real `elector serve` (behind a proxy that
// cuts it off, for the step-down), and its deadline rules on a clock that
// does not move.

import assert from "node:assert/strict";
import { after, before, test, type TestContext } from "node:test";
import {
  CandidateNotFoundError,
  Client,
  LeadershipLostError,
  SessionEndedError,
  SessionKeeper,
  SessionNotFoundError,
  keepSession,
  stepDownMargin,
  type Fetch,
  type Reason,
  type Session,
  type SessionAnswer,
  type SessionCandidate,
  type SessionLead,
} from "../dist/index.js";
import { memoryLogger, Proxy, startGateway, waitFor, type Gateway } from "./helpers.js";

let gw: Gateway;
let c: Client;
before(async () => {
  gw = await startGateway();
  c = new Client(gw.url);
});
after(() => gw?.stop());

/** within resolves with what p resolves with, and rejects naming what it waited for if timeoutMs pass first. */
async function within<T>(p: Promise<T>, what: string, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs}ms waiting for ${what}`)), timeoutMs)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** ended waits for signal to abort and returns its reason. */
function ended(signal: AbortSignal, what: string, timeoutMs: number): Promise<unknown> {
  return within(new Promise((resolve) => (signal.aborted ? resolve(signal.reason) : signal.addEventListener("abort", () => resolve(signal.reason), { once: true }))), what, timeoutMs);
}

/** reasonOf is why a lead ended: the reason of its LeadershipLostError, or "" while it lives. */
function reasonOf(l: SessionLead): Reason | "" {
  if (!l.signal.aborted) return "";
  assert.ok(l.signal.reason instanceof LeadershipLostError, String(l.signal.reason));
  return l.signal.reason.reason;
}

/** kept opens a kept session on client, closed when the test ends whatever happens (a second close is harmless). */
async function kept(t: TestContext, client: Client, options: Parameters<typeof keepSession>[1]): Promise<SessionKeeper> {
  const k = await keepSession(client, options);
  t.after(() => k.close().catch(() => {}));
  return k;
}

/** nextAnswer waits for the keeper's next heartbeat answer. */
async function nextAnswer(k: SessionKeeper): Promise<SessionAnswer> {
  await within(k.last().next, "a heartbeat answer of the session", 10 * k.ttlMs);
  assert.equal(k.signal.aborted, false, `the keeper ended: ${String(k.signal.reason)}`);
  return k.last();
}

test("a kept session keeps its leaders past twice the TTL; close ends them first, then resigns them", async (t) => {
  const ttl = 3000;
  const leads: Record<string, SessionLead> = {};
  let atClose: boolean[] | undefined; // whether each lead had ended when the close was sent
  const fetch: Fetch = (input, init) => {
    if (init.method === "DELETE" && input.includes("/v1/sessions/")) atClose ??= Object.values(leads).map((l) => l.signal.aborted);
    return globalThis.fetch(input, init);
  };
  const k = await kept(t, new Client(gw.url, { fetch }), { ttlMs: ttl });
  try {
    assert.match(k.id, /^ses_/);
    assert.ok(k.token.length > 0);
    assert.equal(k.ttlMs, ttl);
    assert.equal(k.marginMs, stepDownMargin(ttl));
    assert.equal(k.signal.aborted, false);
    const opened = k.last().sent;
    for (const election of ["k-billing", "k-payroll"]) {
      const { status, sent } = await k.campaign(election, { id: "node-a" });
      assert.equal(status.state, "leader", election);
      assert.equal(status.token, k.token);
      leads[election] = k.lead(election, status.term, sent);
    }
    let last = k.last();
    while (last.sent - opened <= 2 * ttl) last = await nextAnswer(k);
    for (const [election, l] of Object.entries(leads)) {
      assert.equal(reasonOf(l), "", `${election}: the leadership ended`);
      assert.equal(l.active, true, election);
      const sc = last.session.candidates.find((x) => x.election === election);
      assert.deepEqual([sc?.state, sc?.term], ["leader", l.term], `${election} in the last answer`);
      const leader = await c.leader(election);
      assert.deepEqual([leader.id, leader.term], ["node-a", l.term], `leader of ${election}`);
    }
  } finally {
    await k.close();
  }
  assert.deepEqual(atClose, [true, true], "every lead ended before the session was closed");
  await within(k.done, "the keeper's end", 1000);
  assert.ok(k.signal.reason instanceof SessionEndedError, String(k.signal.reason));
  for (const [election, l] of Object.entries(leads)) {
    assert.equal(reasonOf(l), "session-ended", election);
    assert.equal((l.signal.reason as Error).cause, k.signal.reason);
    await assert.rejects(c.candidate(election, "node-a"), CandidateNotFoundError, `${election}: resigned by the close`);
  }
  const late = k.lead("k-billing", leads["k-billing"].term, k.last().sent);
  assert.equal(reasonOf(late), "session-ended", "a lead of an ended keeper is over from the start");
});

test("a lead ends with the leadership: after a transfer away, and after a resignation", async (t) => {
  const ttl = 3000;
  const k = await kept(t, c, { ttlMs: ttl });
  const tr = await k.campaign("k-transfer", { id: "node-a" });
  assert.equal(tr.status.state, "leader");
  const transferred = k.lead("k-transfer", tr.status.term, tr.sent);
  const b = await c.campaign("k-transfer", { id: "node-b", ttl: "1m" });
  await c.transfer("k-transfer", "node-b");

  const r = await k.campaign("k-resign", { id: "node-a" });
  assert.equal(r.status.state, "leader");
  const resigned = k.lead("k-resign", r.status.term, r.sent);
  await c.resign("k-resign", "node-a", k.token);

  // A leader asked to hand over is not renewed: its lowered deadline
  // comes first, or an answer that no longer shows it leading.
  await ended(transferred.signal, "the end of the transferred leadership", 10 * ttl);
  assert.ok(["heartbeat-timeout", "lost"].includes(reasonOf(transferred)), reasonOf(transferred));
  await ended(resigned.signal, "the end of the resigned leadership", 10 * ttl);
  assert.equal(reasonOf(resigned), "lost");
  assert.equal(k.signal.aborted, false, `the keeper ended: ${String(k.signal.reason)}`);
  await c.resign("k-transfer", "node-b", b.token);
});

test("cut off, a lead steps down while the keeper keeps trying; back after the session expired, the keeper ends", async (t) => {
  const ttl = 2000;
  const proxy = await Proxy.start(gw.url);
  t.after(() => proxy.close());
  const log = memoryLogger();
  const origin = Date.now() - performance.now();
  const now = () => origin + performance.now();
  const k = await kept(t, new Client(proxy.url), { ttlMs: ttl, logger: log, now });
  const { status, sent } = await k.campaign("k-cut", { id: "node-a" });
  assert.equal(status.state, "leader");
  const lead = k.lead("k-cut", status.term, sent);
  await nextAnswer(k);

  const cutAt = now();
  proxy.cut();
  await ended(lead.signal, "the step-down while no heartbeat gets through", 10 * ttl);
  assert.equal(reasonOf(lead), "heartbeat-timeout");
  assert.ok(now() >= lead.deadline, "not before its deadline");
  assert.ok(k.last().sent < cutAt, "a heartbeat sent after the cut got through");
  assert.equal(k.signal.aborted, false, `the keeper ended while the gateway was out of reach: ${String(k.signal.reason)}`);

  await waitFor("the session's candidacy to expire at the gateway", async () => {
    const err = await c.candidate("k-cut", "node-a").then(() => undefined, (e: unknown) => e);
    return err instanceof CandidateNotFoundError;
  });
  assert.equal(k.signal.aborted, false, "the keeper gave up while cut off");
  assert.ok(log.lines.some((l) => l.level === "warn" && l.message.startsWith("session heartbeat failed")), "no failed heartbeat was logged");
  proxy.heal();
  await ended(k.signal, "the keeper's end once the gateway answers again", 10 * ttl);
  assert.ok(k.signal.reason instanceof SessionNotFoundError, String(k.signal.reason));
  assert.equal(reasonOf(lead), "heartbeat-timeout", "the lead kept the reason it ended with");
});

test("stop and the signal given to keepSession end the keeper and its leads, leaving the session to expire", async (t) => {
  const k = await kept(t, c, { ttlMs: 10_000 });
  const { status, sent } = await k.campaign("k-stop", { id: "node-a" });
  const lead = k.lead("k-stop", status.term, sent);
  await k.stop();
  assert.ok(k.signal.reason instanceof SessionEndedError, String(k.signal.reason));
  assert.equal(reasonOf(lead), "session-ended");
  // The session lives on until its TTL: its own heartbeat still renews it.
  const hb = await c.heartbeatSession(k.id, k.token);
  assert.deepEqual(hb.candidates.map((x) => [x.election, x.state, x.term]), [["k-stop", "leader", status.term]]);
  await c.closeSession(k.id, k.token);

  const ac = new AbortController();
  const k2 = await kept(t, c, { ttlMs: 10_000, signal: ac.signal });
  const l2 = await k2.campaign("k-stop", { id: "node-a" });
  const lead2 = k2.lead("k-stop", l2.status.term, l2.sent);
  ac.abort("shutting down");
  await within(k2.done, "the keeper's end", 10_000);
  assert.equal(k2.signal.reason, "shutting down");
  assert.equal(reasonOf(lead2), "session-ended");
  assert.equal((lead2.signal.reason as Error).cause, "shutting down");
  await c.heartbeatSession(k2.id, k2.token);
  await k2.close();
  await assert.rejects(c.heartbeatSession(k2.id, k2.token), SessionNotFoundError, "close() after the end still closes the session");
});

// Without a gateway: the keeper is made as keepSession makes it but not
// started, its answers given by hand as its heartbeats would give them, on
// a clock that stands still an hour before every deadline.
const TTL = 10_000;
const MARGIN = stepDownMargin(TTL);
const BASE = 3_600_000; // the send times, after the clock's 0
const GW = Date.parse("2026-01-01T00:00:00Z"); // the gateway's clock: unrelated
const still = () => 0;
const iso = (ms: number) => new Date(GW + ms).toISOString();
const answer = (...cs: SessionCandidate[]): Session => ({ id: "ses_x", ttl: "10s", expires_at: iso(TTL), candidates: cs });
const leader = (term: number, expires: number): SessionCandidate => ({ election: "e", id: "a", state: "leader", term, expires_at: iso(expires) });

/** keeper makes a keeper whose last answer is last, sent at BASE + sent; it is stopped when the test ends, clearing the timers of its leads. */
function keeper(t: TestContext, last: Session, sent: number): SessionKeeper {
  const k = new SessionKeeper(new Client("http://127.0.0.1:9"), { ...last, token: "t" }, BASE + sent, { now: still });
  t.after(() => k.stop());
  return k;
}

test("a lead's deadline is the last renewal's until an answer names it, then the newest answer's", async (t) => {
  type Step = [Session, number]; // an answer and when its heartbeat was sent, after BASE
  const cases: { name: string; last: Step; since: number; then?: Step[]; deadline?: number; reason?: Reason }[] = [
    { name: "before any answer", last: [answer(), 0], since: 1000, deadline: TTL - MARGIN },
    { name: "renewed later", last: [answer(), 0], since: 1000, then: [[answer(leader(7, TTL)), 4000]], deadline: 4000 + TTL - MARGIN },
    { name: "named in the last answer", last: [answer(leader(7, TTL)), 2000], since: 1000, deadline: 2000 + TTL - MARGIN },
    {
      name: "asked to hand over: lowered, as a heartbeat no longer renews it",
      last: [answer(), 0],
      since: 1000,
      then: [
        [answer(leader(7, TTL)), 2000],
        [answer(leader(7, 4000)), 5000],
      ],
      deadline: 5000 + 4000 - MARGIN,
    },
    { name: "answered before the campaign, not naming it", last: [answer(), 0], since: 1000, then: [[answer(), 500]], deadline: TTL - MARGIN },
    { name: "gone from an answer after the campaign", last: [answer(), 0], since: 1000, then: [[answer(), 2000]], reason: "lost" },
    { name: "not named by the last answer, sent after the campaign", last: [answer(), 2000], since: 1000, reason: "lost" },
    { name: "another term", last: [answer(), 0], since: 1000, then: [[answer(leader(8, TTL)), 500]], reason: "lost" },
    { name: "a follower", last: [answer(), 0], since: 1000, then: [[answer({ ...leader(7, TTL), state: "follower" }), 2000]], reason: "lost" },
    { name: "in error", last: [answer(), 0], since: 1000, then: [[answer({ ...leader(7, TTL), state: "error" }), 2000]], reason: "lost" },
    { name: "an unreadable answer", last: [answer(), 0], since: 1000, then: [[answer({ ...leader(7, TTL), expires_at: "soon" }), 2000]], reason: "lost" },
  ];
  for (const tt of cases) {
    const k = keeper(t, ...tt.last);
    const l = k.lead("e", 7, BASE + tt.since);
    for (const [s, sent] of tt.then ?? []) k.answered(s, BASE + sent);
    assert.equal(reasonOf(l), tt.reason ?? "", tt.name);
    if (tt.deadline !== undefined) assert.equal(l.deadline, BASE + tt.deadline, tt.name);
    l.cancel();
    await k.stop();
  }
});

test("a lead ends when cancelled, when its signal aborts, and with the keeper", async (t) => {
  const k = keeper(t, answer(), 0);
  const a = k.lead("e", 7, BASE + 1000);
  a.cancel();
  assert.equal(reasonOf(a), "cancelled");

  const ac = new AbortController();
  const b = k.lead("e", 7, BASE + 1000, { signal: ac.signal });
  ac.abort("done with it");
  assert.equal(reasonOf(b), "cancelled");
  assert.equal((b.signal.reason as Error).cause, "done with it");
  assert.equal(reasonOf(k.lead("e", 7, BASE + 1000, { signal: ac.signal })), "cancelled", "a signal aborted already");

  const c1 = k.lead("e", 7, BASE + 1000);
  const { next } = k.last();
  k.answered(answer(leader(7, TTL)), BASE + 2000);
  await within(next, "the next answer", 1000);
  assert.equal(k.last().sent, BASE + 2000);
  assert.equal(c1.deadline, BASE + 2000 + TTL - MARGIN);
  await k.stop();
  assert.equal(reasonOf(c1), "session-ended");
  assert.ok((c1.signal.reason as Error).cause instanceof SessionEndedError);
  k.answered(answer(leader(7, TTL)), BASE + 4000);
  assert.equal(k.last().sent, BASE + 2000, "an answer after the end is not taken");
  await within(k.last().next, "the end, as the next answer's promise", 1000);
});
