// Sessions against a real `elector serve`: one liveness for many candidacies.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  CandidateNotFoundError,
  Client,
  InvalidRequestError,
  SessionInElectionError,
  SessionNotFoundError,
  SessionTokenMismatchError,
  SessionTokenMissingError,
  sessionStepDownDeadline,
  stepDownMargin,
  type Session,
  type SessionCandidate,
} from "../dist/index.js";
import { startGateway, waitFor, type Gateway } from "./helpers.js";

let gw: Gateway;
let c: Client;
before(async () => {
  gw = await startGateway();
  c = new Client(gw.url);
});
after(() => gw?.stop());

test("a session's heartbeat renews and its close resigns every candidacy", async () => {
  const s = await c.openSession("5s");
  assert.match(s.id, /^ses_/);
  assert.ok(s.token.length > 0);
  assert.equal(s.ttl, "5s");
  assert.deepEqual(s.candidates, []);
  const terms: Record<string, number> = {};
  for (const election of ["s-billing", "s-payroll"]) {
    const st = await c.campaign(election, { id: "node-a", session: s });
    assert.equal(st.state, "leader");
    assert.equal(st.ttl, "5s");
    assert.equal(st.token, s.token);
    terms[election] = st.term;
  }
  const b = await c.campaign("s-billing", { id: "node-b", ttl: "1m" });
  const before = Date.parse((await c.candidate("s-payroll", "node-a")).expires_at);

  await new Promise((r) => setTimeout(r, 20));
  const sent = Date.now();
  const hb = await c.heartbeatSession(s.id, s.token);
  assert.equal(hb.id, s.id);
  assert.ok(Date.parse(hb.expires_at) > Date.parse(s.expires_at));
  assert.deepEqual(hb.candidates.map((x) => [x.election, x.id]), [["s-billing", "node-a"], ["s-payroll", "node-a"]]);
  for (const x of hb.candidates) {
    assert.equal(x.expires_at, hb.expires_at);
    assert.equal(x.state, "leader");
    assert.equal(x.term, terms[x.election]);
    assert.equal(sessionStepDownDeadline(hb, x.election, terms[x.election], sent), sent + 5000 - stepDownMargin(5000));
  }
  // An answer whose times cannot be read gives no deadline: stop at once.
  assert.equal(sessionStepDownDeadline({ ...hb, expires_at: "soon" }, "s-billing", terms["s-billing"], sent), undefined);
  assert.equal(sessionStepDownDeadline({ ...hb, ttl: "5 seconds" }, "s-billing", terms["s-billing"], sent), undefined);
  assert.ok(Date.parse((await c.candidate("s-payroll", "node-a")).expires_at) > before);
  // A candidacy's own heartbeat takes the session's token.
  assert.equal((await c.heartbeat("s-billing", "node-a", s.token)).state, "leader");

  await c.closeSession(s.id, s.token);
  assert.deepEqual((await c.candidates("s-payroll")).candidates, []);
  assert.equal((await c.leader("s-billing")).id, "node-b");
  await assert.rejects(c.heartbeatSession(s.id, s.token), SessionNotFoundError);
  await assert.rejects(c.heartbeat("s-payroll", "node-a", s.token), CandidateNotFoundError);
  await c.resign("s-billing", "node-b", b.token);
});

test("a session outlives its TTL while it heartbeats and ends when it stops", async () => {
  const s = await c.openSession(1000);
  await c.campaign("s-expiry", { id: "node-a", session: { id: s.id, token: s.token } });
  for (const end = Date.now() + 2000; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
    await c.heartbeatSession(s.id, s.token);
  }
  assert.equal((await c.leader("s-expiry")).id, "node-a");
  await waitFor("the session's candidacy to expire", async () => {
    const err = await c.candidate("s-expiry", "node-a").then(() => undefined, (e: unknown) => e);
    return err instanceof CandidateNotFoundError;
  });
  await assert.rejects(c.heartbeatSession(s.id, s.token), SessionNotFoundError);
});

test("session problems come back typed", async () => {
  const s = await c.openSession("1m");
  const other = await c.openSession();
  assert.equal(other.ttl, "10s"); // the gateway's default
  await c.campaign("s-problems", { id: "node-a", session: s });
  await assert.rejects(c.heartbeatSession(s.id, other.token), SessionTokenMismatchError);
  await assert.rejects(c.closeSession(s.id, ""), SessionTokenMissingError);
  await assert.rejects(c.campaign("s-problems", { id: "node-b", session: s }), SessionInElectionError);
  await assert.rejects(c.campaign("s-problems", { id: "node-c", session: { id: s.id, token: "" } }), SessionTokenMissingError);
  await assert.rejects(c.campaign("s-problems-2", { id: "node-a", ttl: "1m", session: s }), InvalidRequestError);
  await assert.rejects(c.openSession("2h"), InvalidRequestError);
  await c.closeSession(other.id, other.token);
  const gone = await c.campaign("s-problems-2", { id: "node-a", session: other }).catch((e: unknown) => e);
  assert.ok(gone instanceof SessionNotFoundError, String(gone));
  assert.ok(!gone.message.includes(other.token));
  await c.closeSession(s.id, s.token);
});

test("the step-down deadline counts what the heartbeat gave each candidacy", () => {
  const began = Date.parse("2026-11-27T10:00:00Z"); // the heartbeat's start, on the gateway's clock
  const at = (ms: number) => new Date(began + ms).toISOString();
  const s: Session = {
    id: "ses_x",
    ttl: "10s",
    expires_at: at(10_000),
    candidates: [
      { election: "renewed", id: "a", state: "leader", term: 7, expires_at: at(10_000) },
      { election: "handing-over", id: "a", state: "leader", term: 7, expires_at: at(3000) },
      { election: "odd", id: "a", state: "leader", term: 7, expires_at: at(3_600_000) },
    ],
  };
  const sent = 1000; // our clock, unrelated to the gateway's
  assert.equal(sessionStepDownDeadline(s, "renewed", 7, sent), sent + 10_000 - 1000);
  assert.equal(sessionStepDownDeadline(s, "handing-over", 7, sent), sent + 3000 - 1000);
  assert.equal(sessionStepDownDeadline(s, "odd", 7, sent), sent + 10_000 - 1000); // never more than the TTL
  assert.equal(sessionStepDownDeadline(s, "elsewhere", 7, sent), undefined);
  assert.equal(sessionStepDownDeadline({ ...s, ttl: "1m0.5s" }, "renewed", 7, 0), 60_500 - 6050);
});

test("the step-down deadline needs the candidacy to lead with the caller's term", () => {
  const expires = "2026-11-27T10:00:10Z";
  const cases: { state: SessionCandidate["state"]; term: number; leadsWith: number; leads: boolean; why: string }[] = [
    { state: "leader", term: 7, leadsWith: 7, leads: true, why: "the caller's very term" },
    { state: "leader", term: 9, leadsWith: 7, leads: false, why: "leads again, with a later term: fenced off" },
    { state: "leader", term: 7, leadsWith: 6, leads: false, why: "another term" },
    { state: "follower", term: 7, leadsWith: 7, leads: false, why: "deposed (a lowered holders setting), yet renewed" },
    { state: "error", term: 8, leadsWith: 8, leads: false, why: "deposed (a failed begin webhook), yet renewed" },
    { state: "error", term: 8, leadsWith: 7, leads: false, why: "in error, another term" },
  ];
  for (const { state, term, leadsWith, leads, why } of cases) {
    const s: Session = { id: "ses_x", ttl: "10s", expires_at: expires, candidates: [{ election: "billing", id: "a", state, term, expires_at: expires }] };
    assert.equal(sessionStepDownDeadline(s, "billing", leadsWith, 1000), leads ? 1000 + 10_000 - 1000 : undefined, why);
  }
  // An answer without state or term, as from an older gateway: no deadline.
  const old = JSON.parse(`{"id":"ses_x","ttl":"10s","expires_at":"${expires}","candidates":[{"election":"billing","id":"a","expires_at":"${expires}"}]}`) as Session;
  assert.equal(sessionStepDownDeadline(old, "billing", 0, 1000), undefined);
});
