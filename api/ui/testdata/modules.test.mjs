// modules.test.mjs: the live view's modules that need no browser, under
// node's test runner (api/ui's TestModulesInNode runs it):
//   node --test api/ui/testdata/modules.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { eventStreamParser } from "../page/events.mjs";
import { apply, describe, holdersOf, parseDuration, slots, span } from "../page/model.mjs";

// parse feeds chunks to a parser and returns what it dispatched.
function parse(chunks, lastId = "") {
  const events = [];
  const retries = [];
  const p = eventStreamParser(lastId, (ev) => events.push(ev), (ms) => retries.push(ms));
  for (const c of chunks) p.push(c);
  return { events, retries, lastId: p.lastId };
}

const stream = "retry: 2000\n: connected\n\nid: 7\nevent: reset\ndata: {\"a\":1}\n\n" +
  ": keep-alive\n\nid: 8\nevent: leader.begin\ndata: {\"b\":2}\n\n";

test("the gateway's stream, whole and byte by byte", () => {
  const want = {
    events: [
      { type: "reset", data: "{\"a\":1}", id: "7" },
      { type: "leader.begin", data: "{\"b\":2}", id: "8" },
    ],
    retries: [2000],
    lastId: "8",
  };
  assert.deepEqual(parse([stream]), want);
  assert.deepEqual(parse([...stream]), want);
});

test("line endings: CRLF split between chunks, lone CR, LF", () => {
  const want = [{ type: "x", data: "1", id: "" }, { type: "y", data: "2", id: "" }];
  assert.deepEqual(parse(["event: x\r", "\ndata: 1\r", "\n\r", "\nevent: y\rdata: 2\r\r"]).events, want);
  assert.deepEqual(parse(["event: x\ndata: 1\n\nevent: y\ndata: 2\n\n"]).events, want);
  assert.deepEqual(parse(["data: a\r", "", "\ndata: b\r\n\r\n"]).events, [{ type: "message", data: "a\nb", id: "" }]);
});

const cases = [
  { name: "data lines join with newlines", in: "data: a\ndata: b\n\n", events: [{ type: "message", data: "a\nb", id: "" }] },
  { name: "only the first space is dropped", in: "data:x\ndata:  y\n\n", events: [{ type: "message", data: "x\n y", id: "" }] },
  { name: "a field without a colon is empty", in: "data\n\n", events: [{ type: "message", data: "", id: "" }] },
  { name: "an event without data is not dispatched, but its id counts", in: "id: 3\nevent: x\n\n", events: [], lastId: "3" },
  { name: "an id with NUL is ignored", in: "id: 4\n\nid: a\0b\ndata: z\n\n", events: [{ type: "message", data: "z", id: "4" }], lastId: "4" },
  { name: "the id stays for later events", in: "id: 5\ndata: a\n\ndata: b\n\n", events: [{ type: "message", data: "a", id: "5" }, { type: "message", data: "b", id: "5" }], lastId: "5" },
  { name: "a retry that is not a number is ignored", in: "retry: soon\nretry: 300\n\n", events: [], retries: [300] },
  { name: "comments and unknown fields are ignored", in: ": hi\nfoo: bar\ndata: d\n\n", events: [{ type: "message", data: "d", id: "" }] },
  { name: "an event not yet ended waits", in: "data: half", events: [] },
];
for (const c of cases) {
  test(`parser: ${c.name}`, () => {
    const got = parse([c.in]);
    assert.deepEqual(got.events, c.events);
    if (c.lastId !== undefined) assert.equal(got.lastId, c.lastId);
    if (c.retries !== undefined) assert.deepEqual(got.retries, c.retries);
  });
}

test("resuming: the parser starts from the last id it is given", () => {
  assert.equal(parse(["data: a\n\n"], "41").events[0].id, "41");
});

const ev = (type, data, timestamp = "2026-11-23T10:00:00Z") => ({ type, timestamp, data: { election: "billing", ...data } });

test("model: the leader resigns and the next in line leads", () => {
  let s = {
    election: "billing", term: 1, settings: {}, leader: { id: "a", term: 1, metadata: {} },
    candidates: [{ id: "a", state: "leader", term: 1 }, { id: "b", state: "follower" }],
  };
  s = apply(s, "billing", "leader.end", ev("leader.end", { term: 1, candidate: { id: "a" }, reason: "resigned" }));
  assert.equal(s.leader, null);
  s = apply(s, "billing", "candidate.left", ev("candidate.left", { term: 1, candidate: { id: "a" } }));
  s = apply(s, "billing", "leader.begin", ev("leader.begin", {
    term: 2, candidate: { id: "b", metadata: { zone: "b" } }, previous: { id: "a", term: 1 }, reason: "resigned",
  }, "2026-11-23T10:00:01Z"));
  assert.deepEqual(s.leader, { id: "b", term: 2, metadata: { zone: "b" }, since: "2026-11-23T10:00:01Z", expires_at: undefined });
  assert.equal(s.term, 2);
  assert.deepEqual(s.candidates.map((c) => [c.id, c.state]), [["b", "leader"]]);
});

test("model: a leader in error cools down and rejoins", () => {
  let s = { election: "e", term: 3, leader: { id: "a", term: 3 }, candidates: [{ id: "a", state: "leader" }] };
  s = apply(s, "e", "leader.error", ev("leader.error", { term: 3, candidate: { id: "a" }, detail: "begin failed" }));
  assert.equal(s.leader.id, "a");
  s = apply(s, "e", "leader.end", ev("leader.end", { term: 3, candidate: { id: "a" }, reason: "error" }));
  assert.equal(s.candidates[0].state, "error");
  s = apply(s, "e", "candidate.joined", ev("candidate.joined", { term: 3, candidate: { id: "a" }, reason: "rejoined" }));
  assert.deepEqual(s.candidates.map((c) => [c.id, c.state]), [["a", "follower"]]);
});

test("model: events before any snapshot start the state", () => {
  const s = apply(null, "new", "candidate.joined", ev("candidate.joined", { term: 0, candidate: { id: "a", metadata: { x: 1 } } }));
  assert.equal(s.election, "new");
  assert.deepEqual(s.candidates.map((c) => [c.id, c.state, c.metadata]), [["a", "follower", { x: 1 }]]);
  assert.equal(apply(s, "new", "candidate.joined", ev("candidate.joined", { term: 0, candidate: { id: "a" } })).candidates.length, 1);
});

test("describe", () => {
  assert.equal(describe("leader.begin", { term: 2, candidate: { id: "b" }, previous: { id: "a", term: 1 }, reason: "expired" }),
    "b leads, term 2 after a (term 1, expired)");
  assert.equal(describe("leader.end", { term: 1, candidate: { id: "a" }, reason: "transferred" }), "a stopped leading, term 1: transferred");
  assert.equal(describe("candidate.joined", { candidate: { id: "c" } }), "c joined");
});

test("durations", () => {
  for (const [s, ms] of [["10s", 10e3], ["1m30s", 90e3], ["1h0m0s", 3600e3], ["500ms", 500], ["1.5s", 1500], ["", 0], [undefined, 0]]) {
    assert.equal(parseDuration(s), ms, s);
  }
  for (const [ms, s] of [[0, "0s"], [59999, "59s"], [60e3, "1m 00s"], [3725e3, "1h 02m"], [-5, "0s"]]) {
    assert.equal(span(ms), s, String(ms));
  }
});

test("model: a transfer is pending until it completes or is cancelled", () => {
  let s = {
    election: "e", term: 1, leader: { id: "a", term: 1 },
    candidates: [{ id: "a", state: "leader" }, { id: "b", state: "follower" }, { id: "c", state: "follower" }],
  };
  s = apply(s, "e", "leader.transfer", ev("leader.transfer", { term: 1, candidate: { id: "c" }, previous: { id: "a", term: 1 }, reason: "transferred" }));
  assert.deepEqual(s.transfer, { to: "c", from: "a", reason: "transferred", requested_at: "2026-11-23T10:00:00Z" });
  s = apply(s, "e", "leader.transfer_cancelled", ev("leader.transfer_cancelled", { term: 1, candidate: { id: "c" }, reason: "cancelled" }));
  assert.equal(s.transfer, null);
  assert.equal(s.leader.id, "a");
  s = apply(s, "e", "leader.transfer", ev("leader.transfer", { term: 1, candidate: { id: "b" }, previous: { id: "a", term: 1 }, reason: "transferred" }));
  s = apply(s, "e", "leader.end", ev("leader.end", { term: 1, candidate: { id: "a" }, reason: "transferred" }));
  s = apply(s, "e", "leader.begin", ev("leader.begin", { term: 2, candidate: { id: "b" }, previous: { id: "a", term: 1 }, reason: "transferred" }));
  assert.equal(s.transfer, null);
  assert.equal(s.leader.id, "b");
});

test("describe: transfers, in words", () => {
  assert.equal(describe("leader.transfer", { term: 4, candidate: { id: "c" }, previous: { id: "a", term: 4 }, reason: "transferred" }),
    "a is asked to hand over to c, term 4");
  assert.equal(describe("leader.transfer", { term: 4, candidate: { id: "c" }, previous: { id: "a", term: 4 }, reason: "preempted" }),
    "a is asked to hand over to c, term 4 (preempted: it has a higher priority)");
  assert.equal(describe("leader.transfer_cancelled", { term: 4, candidate: { id: "c" }, reason: "cancelled" }),
    "the transfer to c was cancelled; the leader goes on");
  assert.equal(describe("leader.transfer_cancelled", { term: 4, candidate: { id: "c" }, reason: "expired" }),
    "the transfer to c was dropped: c expired");
  assert.equal(describe("leader.transfer_cancelled", { term: 4, candidate: { id: "c" }, reason: "error" }),
    "the transfer to c was dropped: c reported an error");
  // A type this page does not know is still said in words, not as JSON.
  assert.equal(describe("leader.someday", { term: 4, candidate: { id: "c" }, reason: "x" }), "leader.someday of c, term 4: x");
});

test("model: with several holders each holdership begins and ends on its own", () => {
  let s = {
    election: "e", term: 1, settings: { holders: 2 }, leader: { id: "a", term: 1 }, holders: [{ id: "a", term: 1 }],
    candidates: [{ id: "a", state: "leader", term: 1 }, { id: "b", state: "follower" }, { id: "c", state: "follower" }],
  };
  assert.equal(slots(s), 2);
  s = apply(s, "e", "leader.begin", ev("leader.begin", { term: 2, candidate: { id: "b" } }));
  assert.deepEqual(holdersOf(s).map((h) => [h.id, h.term]), [["a", 1], ["b", 2]]);
  assert.equal(s.leader.id, "a");
  assert.deepEqual(s.candidates.map((c) => [c.id, c.state]), [["a", "leader"], ["b", "leader"], ["c", "follower"]]);
  s = apply(s, "e", "leader.transfer", ev("leader.transfer", { term: 2, candidate: { id: "c" }, previous: { id: "a", term: 1 }, reason: "transferred" }));
  s = apply(s, "e", "leader.end", ev("leader.end", { term: 1, candidate: { id: "a" }, reason: "transferred" }));
  assert.equal(s.leader.id, "b");
  s = apply(s, "e", "leader.begin", ev("leader.begin", { term: 3, candidate: { id: "c" } }));
  assert.deepEqual(holdersOf(s).map((h) => h.id), ["b", "c"]);
  assert.equal(s.transfer, null);
  s = apply(s, "e", "leader.end", ev("leader.end", { term: 3, candidate: { id: "c" }, reason: "holders_reduced" }));
  assert.deepEqual(holdersOf(s).map((h) => h.id), ["b"]);
  assert.equal(s.candidates.find((c) => c.id === "c").state, "follower");
  assert.equal(describe("leader.end", { term: 3, candidate: { id: "c" }, reason: "holders_reduced" }),
    "c stopped holding, term 3: fewer holders now (it stays in line)");
  assert.deepEqual(holdersOf({ leader: { id: "x" } }).map((h) => h.id), ["x"]);
  assert.deepEqual(holdersOf(null), []);
});
