// The plain calls, the watch and observe against a real `elector serve`.

import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { after, before, test } from "node:test";
import {
  CandidateExistsError,
  CandidateNotFoundError,
  Client,
  ElectionNotEmptyError,
  ElectionNotFoundError,
  InvalidConfigError,
  InvalidRequestError,
  NoLeaderError,
  NoTransferPendingError,
  NotLeaderError,
  PreemptOnError,
  TimeoutError,
  TokenMismatchError,
  TransferPendingError,
  TransportError,
  WebhookReceiver,
  type ObservedLeader,
  type WatchEvent,
} from "../dist/index.js";
import { freePort, memoryLogger, Proxy, startGateway, waitFor, type Gateway } from "./helpers.js";

let gw: Gateway;
let c: Client;
before(async () => {
  gw = await startGateway();
  c = new Client(gw.url);
});
after(() => gw?.stop());

test("campaign, heartbeat and resign hand over with typed errors", async () => {
  const a = await c.campaign("calls", { id: "node-a:1", ttl: 60_000, metadata: { addr: "10.0.0.7:8080" } });
  assert.equal(a.state, "leader");
  assert.equal(a.ttl, "1m0s");
  assert.deepEqual(a.metadata, { addr: "10.0.0.7:8080" });
  assert.ok(a.token.length > 0);
  const b = await c.campaign("calls", { id: "node-b", ttl: "1m" });
  assert.equal(b.state, "follower");
  assert.equal(b.leader?.id, "node-a:1");

  const hb = await c.heartbeat("calls", "node-a:1", a.token);
  assert.equal(hb.state, "leader");
  assert.equal(hb.term, a.term);
  await assert.rejects(c.heartbeat("calls", "node-a:1", b.token), TokenMismatchError);
  await assert.rejects(c.campaign("calls", { id: "node-b" }), CandidateExistsError);
  const bad = await c.campaign("Not A Name", { id: "x" }).catch((e: unknown) => e);
  assert.ok(bad instanceof InvalidRequestError, String(bad));
  assert.equal(bad.status, 400);
  assert.ok(bad.detail.length > 0);

  assert.equal((await c.leader("calls")).id, "node-a:1");
  assert.deepEqual(
    (await c.candidates("calls")).candidates.map((x) => x.id),
    ["node-a:1", "node-b"],
  );
  assert.equal((await c.candidate("calls", "node-b")).position, 1);
  assert.equal((await c.election("calls")).candidates, 2);
  assert.ok((await c.elections()).elections.some((e) => e.name === "calls"));
  await assert.rejects(c.deleteElection("calls"), ElectionNotEmptyError);

  await c.resign("calls", "node-a:1", a.token);
  await assert.rejects(c.heartbeat("calls", "node-a:1", a.token), CandidateNotFoundError);
  const next = await c.heartbeat("calls", "node-b", b.token);
  assert.equal(next.state, "leader");
  assert.equal(next.term, a.term + 1);
  const err = await c.reportError("calls", "node-b", b.token, "the work would not start");
  assert.equal(err.state, "error");
  await assert.rejects(c.leader("calls"), NoLeaderError);
  await c.resign("calls", "node-b", b.token);
  await c.deleteElection("calls");
  await assert.rejects(c.election("calls"), ElectionNotFoundError);
});

test("local reads answer as linearizable ones; a bad consistency is refused", async () => {
  await c.campaign("local-reads", { id: "node-a", ttl: 60_000 });
  const reads: Array<(o: { consistency?: "linearizable" | "local" }) => Promise<unknown>> = [
    (o) => c.leader("local-reads", o),
    (o) => c.election("local-reads", o),
    (o) => c.candidates("local-reads", o),
    (o) => c.candidate("local-reads", "node-a", o),
    async (o) => (await c.elections(o)).elections.filter((e) => e.name === "local-reads"),
  ];
  for (const read of reads) {
    assert.deepEqual(await read({ consistency: "local" }), await read({}));
    assert.deepEqual(await read({ consistency: "linearizable" }), await read({}));
    await assert.rejects(read({ consistency: "stale" as "local" }), (err: unknown) => err instanceof InvalidRequestError && /consistency/.test(err.message));
  }
});

test("holders: several lead at once, each with its own term", async () => {
  assert.equal((await c.configure("holders", { holders: 2 })).settings.holders, 2);
  const a = await c.campaign("holders", { id: "a", ttl: "1m" });
  const b = await c.campaign("holders", { id: "b", ttl: "1m" });
  const x = await c.campaign("holders", { id: "c", ttl: "1m" });
  assert.deepEqual([a.state, b.state, x.state], ["leader", "leader", "follower"]);
  assert.ok(b.term > a.term);
  assert.deepEqual(b.holders?.map((h) => h.id), ["a", "b"]);
  const l = await c.leader("holders");
  assert.equal(l.id, "a");
  assert.deepEqual(l.holders?.map((h) => [h.id, h.term]), [["a", a.term], ["b", b.term]]);
  await assert.rejects(c.transfer("holders", "c"), InvalidRequestError);
  const e = await c.transfer("holders", "c", "", { from: "b" });
  assert.equal(e.transfer?.from, "b");
  assert.equal((await c.configure("holders", { holders: null })).settings.holders, 1);
  assert.equal((await c.leader("holders")).holders, undefined);
});

test("transfer and handover", async () => {
  const a = await c.campaign("transfer", { id: "a", ttl: "1m" });
  const b = await c.campaign("transfer", { id: "b", ttl: "1m" });
  const e = await c.transfer("transfer", "b");
  assert.equal(e.transfer?.to, "b");
  const refused = await c.heartbeat("transfer", "a", a.token).catch((x: unknown) => x);
  assert.ok(refused instanceof TransferPendingError, String(refused));
  assert.deepEqual((refused.extensions.transfer as { to: string }).to, "b");
  const st = await c.handover("transfer", "a", a.token);
  assert.equal(st.state, "follower");
  assert.equal(st.leader?.id, "b");
  assert.equal(st.term, a.term + 1);
  await assert.rejects(c.handover("transfer", "a", a.token), NotLeaderError);
  assert.equal((await c.configure("transfer", { error_cooldown: "2s" })).settings.error_cooldown, "2s");
  await c.resign("transfer", "a", a.token);
  await c.resign("transfer", "b", b.token);
});

test("cancelling a transfer keeps the leader; one preempt started is refused while preempt is on", async () => {
  const a = await c.campaign("cancel", { id: "a", ttl: "1m" });
  const b = await c.campaign("cancel", { id: "b", ttl: "1m" });
  await c.transfer("cancel", "b", a.token);
  const e = await c.cancelTransfer("cancel", a.token);
  assert.equal(e.transfer, undefined);
  assert.equal(e.leader?.id, "a");
  assert.equal((await c.heartbeat("cancel", "a", a.token)).state, "leader");
  await assert.rejects(c.cancelTransfer("cancel"), NoTransferPendingError);
  await c.configure("cancel", { preempt: true });
  const p = await c.campaign("cancel", { id: "p", ttl: "1m", priority: 10 });
  await waitFor("preempt's transfer to p", async () => (await c.election("cancel")).transfer?.to === "p");
  await assert.rejects(c.cancelTransfer("cancel"), PreemptOnError);
  for (const [id, token] of [["a", a.token], ["b", b.token], ["p", p.token]]) await c.resign("cancel", id, token);
});

test("no answer is a TransportError, a TimeoutError or the signal's reason", async () => {
  await assert.throws(() => new Client("127.0.0.1:8080"), InvalidConfigError);
  const dead = new Client(`http://127.0.0.1:${await freePort()}`);
  await assert.rejects(dead.leader("x"), TransportError);
  const proxy = await Proxy.start(gw.url);
  try {
    proxy.stall();
    const hung = new Client(proxy.url);
    await assert.rejects(hung.leader("x", { timeoutMs: 200 }), TimeoutError);
    const ac = new AbortController();
    const call = hung.leader("x", { signal: ac.signal });
    const why = new Error("the caller gave up");
    ac.abort(why);
    await assert.rejects(call, (err) => err === why);
  } finally {
    await proxy.close();
  }
});

/** collect reads events from a watch into a list until the signal aborts. */
function collect<T>(events: AsyncIterable<T>): { items: T[]; done: Promise<void> } {
  const items: T[] = [];
  const done = (async () => {
    for await (const ev of events) items.push(ev);
  })();
  return { items, done };
}

const idOf = (ev: WatchEvent) => `${ev.id} ${ev.type}`;

test("a watch starts with a reset and resumes after a dropped connection with no gap and no duplicate", async () => {
  const ac = new AbortController();
  const proxy = await Proxy.start(gw.url);
  try {
    // The reference: a watch on the gateway itself, never dropped.
    const direct = collect(await c.watch("resume", { signal: ac.signal }));
    const viaProxy = collect(await new Client(proxy.url).watch("resume", { signal: ac.signal }));
    await waitFor("both resets", () => direct.items.length > 0 && viaProxy.items.length > 0);
    assert.equal(direct.items[0].type, "reset");
    assert.equal(viaProxy.items[0].type, "reset");

    const x = await c.campaign("resume", { id: "x", ttl: "1m" });
    await waitFor("x's events through the proxy", () => viaProxy.items.length >= 3);
    const before = proxy.connections;
    proxy.cut(); // the stream drops, and reconnections fail for a while
    const y = await c.campaign("resume", { id: "y", ttl: "1m" });
    await c.resign("resume", "x", x.token);
    await c.resign("resume", "y", y.token);
    await waitFor("the reference sees everything", () => direct.items.filter((e) => e.type === "candidate.left").length === 2);
    proxy.heal();
    await waitFor("the resumed watch catches up", () => viaProxy.items.length >= direct.items.length, 15_000);
    assert.ok(proxy.connections > before, "the watch reconnected");
    // One listener per watch on the caller's signal, however often it reconnected.
    assert.ok(getEventListeners(ac.signal, "abort").length <= 2, `${getEventListeners(ac.signal, "abort").length} listeners`);
    assert.deepEqual(viaProxy.items.map(idOf), direct.items.map(idOf));
    assert.ok(viaProxy.items.slice(1).every((e) => e.id !== ""), "every transition has an id");
  } finally {
    ac.abort();
    await proxy.close();
  }
});

test("a watch whose connection goes silent reconnects after its idle timeout and resumes", async () => {
  const ac = new AbortController();
  const proxy = await Proxy.start(gw.url);
  try {
    // An election with events, so that the reset names one to resume after.
    const first = await c.campaign("idle", { id: "first", ttl: "1m" });
    const logger = memoryLogger();
    const events = collect(await new Client(proxy.url, { watchIdleTimeoutMs: 500, reconnectDelayMs: 20, logger }).watch("idle", { signal: ac.signal }));
    await waitFor("the reset", () => events.items.length > 0);
    const before = proxy.connections;
    proxy.stall(); // open connections pass nothing more, and stay open
    const x = await c.campaign("idle", { id: "x", ttl: "1m" });
    // Only the idle timeout closes a stalled connection.
    await waitFor("a reconnection while stalled", () => proxy.connections > before);
    proxy.heal();
    await waitFor("x's events after the silence", () => events.items.some((e) => e.type === "candidate.joined"), 15_000).catch((err) => {
      throw new Error(`${err}; events ${JSON.stringify(events.items.map(idOf))}; log ${JSON.stringify(logger.lines)}; connections ${proxy.connections}`);
    });
    await c.resign("idle", "x", x.token);
    await c.resign("idle", "first", first.token);
  } finally {
    ac.abort();
    await proxy.close();
  }
});

test("a watch from a last event id replays what followed it", async () => {
  const ac = new AbortController();
  const first = collect(await c.watch("replay", { signal: ac.signal }));
  const a = await c.campaign("replay", { id: "a", ttl: "1m" });
  await c.resign("replay", "a", a.token);
  await waitFor("four events", () => first.items.length >= 5);
  const from = first.items[2]; // after a joined and began
  const events = await c.watch("replay", { lastEventId: from.id, signal: ac.signal });
  const again = collect(events);
  await waitFor("the replay", () => again.items.length >= 2);
  assert.deepEqual(again.items.map(idOf), first.items.slice(3).map(idOf));
  assert.equal(events.lastEventId, first.items[first.items.length - 1].id);
  ac.abort();
  await Promise.all([first.done, again.done]);
});

test("a watch of a bad election name fails at once", async () => {
  await assert.rejects(c.watch("Not A Name"), InvalidRequestError);
});

test("observe reports leader changes and no leader", async () => {
  const ac = new AbortController();
  const a = await c.campaign("observe", { id: "a", ttl: "1m" });
  const leaders = collect<ObservedLeader>(await c.observe("observe", { signal: ac.signal }));
  const b = await c.campaign("observe", { id: "b", ttl: "1m" });
  await c.resign("observe", "a", a.token);
  await c.resign("observe", "b", b.token);
  await waitFor("four values", () => leaders.items.length >= 4);
  ac.abort();
  await leaders.done;
  assert.deepEqual(
    leaders.items.map((l) => `${JSON.stringify(l.id)} ${l.term - a.term + 1}`),
    ['"a" 1', '"" 1', '"b" 2', '"" 2'],
  );
});

test("health and ready answer the probes of a serving gateway", async () => {
  assert.deepEqual(await c.health(), { status: "ok" });
  const ready = await c.ready();
  assert.equal(ready.status, "ready");
  assert.equal(ready.checks?.backend, "ok");
});

test("deliveries of a real gateway verify, de-duplicate and refuse tampering", async () => {
  const got: { headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const receiver = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => {
      got.push({ headers: req.headers, body: Buffer.concat(parts) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const sub = await c.createSubscription("hooks", { url, types: ["leader.begin", "leader.end"] });
    assert.match(sub.secret, /^whsec_/);
    assert.equal((await c.subscriptions("hooks")).subscriptions[0].id, sub.id);
    const a = await c.campaign("hooks", { id: "a", ttl: "1m" });
    await waitFor("the leader.begin delivery", () => got.length === 1);
    const d = got[0];
    const r = new WebhookReceiver({ secrets: sub.secret });
    const first = await r.receive({ headers: d.headers, body: d.body });
    assert.equal(first.result, "applied");
    assert.equal(first.result === "applied" && first.event.data.candidate?.id, "a");
    assert.equal((await r.receive({ headers: d.headers, body: d.body })).result, "duplicate");
    const tampered = await r.receive({ headers: d.headers, body: Buffer.concat([d.body, Buffer.from(" ")]) });
    assert.equal(tampered.result === "invalid" && tampered.error.code, "no-match");

    // A redelivery has the same webhook-id: a duplicate.
    await waitFor("the delivery settled", async () => (await c.subscriptionDeliveries("hooks", sub.id)).deliveries[0]?.status === "succeeded");
    const delivery = (await c.subscriptionDeliveries("hooks", sub.id, { limit: 1 })).deliveries[0];
    assert.equal((await c.subscriptionDelivery("hooks", sub.id, delivery.id)).event_id, d.headers["webhook-id"]);
    await c.redeliverSubscriptionDelivery("hooks", sub.id, delivery.id);
    await waitFor("the redelivery", () => got.length === 2);
    assert.equal((await r.receive({ headers: got[1].headers, body: got[1].body })).result, "duplicate");

    // After a rotation both secrets sign; the new one alone verifies.
    const rotated = await c.rotateSubscriptionSecret("hooks", sub.id);
    await c.resign("hooks", "a", a.token);
    await waitFor("the leader.end delivery", () => got.length === 3);
    assert.equal(String(got[2].headers["webhook-signature"]).split(" ").length, 2);
    const fresh = new WebhookReceiver({ secrets: rotated.secret });
    assert.equal((await fresh.receive({ headers: got[2].headers, body: got[2].body })).result, "applied");
    await c.deleteSubscription("hooks", sub.id);
  } finally {
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
  }
});
