// The leadership's signal and the step-down deadline, on a clock the test
// moves: a program whose event loop was blocked past the deadline sees the
// leadership over at its first check, before any timer has run.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Leadership, LeadershipLostError, stepDownMargin } from "../dist/index.js";

test("the step-down margin is the larger of TTL/10 and 500ms", () => {
  assert.equal(stepDownMargin(3000), 500);
  assert.equal(stepDownMargin(10_000), 1000);
  assert.equal(stepDownMargin(60_000), 6000);
});

test("a leadership checks the clock itself", () => {
  let now = 1_000_000;
  const l = new Leadership(7, now + 60_000, () => now);
  assert.equal(l.term, 7);
  assert.equal(l.active, true);
  assert.equal(l.signal.aborted, false);
  l.extend(now + 120_000);
  assert.equal(l.deadline, now + 120_000);

  now += 120_000; // the event loop was blocked past the deadline: no timer has run
  assert.equal(l.signal.aborted, false, "nothing has looked yet");
  assert.equal(l.active, false);
  assert.equal(l.signal.aborted, true, "the first look aborts the signal");
  assert.ok(l.signal.reason instanceof LeadershipLostError);
  assert.equal((l.signal.reason as LeadershipLostError).reason, "heartbeat-timeout");
  assert.throws(() => l.throwIfLost(), LeadershipLostError);
  l.extend(now + 60_000);
  assert.equal(l.active, false, "an ended leadership is not extended");
});

test("a leadership's timer aborts the signal at the deadline", async () => {
  const l = new Leadership(1, Date.now() + 50, Date.now);
  const reason = await new Promise((resolve) => l.signal.addEventListener("abort", () => resolve(l.signal.reason)));
  assert.equal((reason as LeadershipLostError).reason, "heartbeat-timeout");
  assert.ok(Date.now() >= l.deadline);
});

test("the first reason a leadership ends with is the one it keeps", () => {
  const l = new Leadership(2, Date.now() + 60_000, Date.now);
  assert.equal(l.end("transferred"), "transferred");
  assert.equal(l.end("resigned"), "transferred");
  assert.equal((l.signal.reason as LeadershipLostError).reason, "transferred");
});
