// Webhook verification with the Go tests' vectors (the Standard Webhooks
// specification's example), the receiver's de-duplication and stale
// terms, and the Request → Response handler.

import assert from "node:assert/strict";
import { createHmac, randomBytes, webcrypto } from "node:crypto";
import { test } from "node:test";
import {
  MemorySeenIds,
  MemoryTermStore,
  verifyWebhook,
  WebhookReceiver,
  webhookHandler,
  WebhookVerificationError,
  type VerifyOptions,
  type WebhookFailure,
} from "../dist/index.js";

const specSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const specID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const specTimestamp = 1614265330;
const specBody = '{"test": 2432232314}';
const specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

function newSecret(bytes = 32): string {
  return "whsec_" + randomBytes(bytes).toString("base64");
}

/** sign is an independent signer (node:crypto), as the gateway signs. */
function sign(secret: string, id: string, ts: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64");
}

function headers(id: string, ts: number | string, sig: string): Record<string, string> {
  const h: Record<string, string> = {};
  if (id) h["webhook-id"] = id;
  if (ts) h["webhook-timestamp"] = String(ts);
  if (sig) h["webhook-signature"] = sig;
  return h;
}

/** check is verifyWebhook's failure code, or "" when it accepts; the spec body is not an elector event, so acceptance shows as malformed-payload. */
async function check(secrets: string | string[], h: Record<string, string>, body: string, nowSec: number): Promise<WebhookFailure | ""> {
  try {
    await verifyWebhook(secrets, h, body, { now: () => nowSec * 1000 });
    return "";
  } catch (err) {
    assert.ok(err instanceof WebhookVerificationError, String(err));
    return err.code;
  }
}

test("verifyWebhook checks as the Go verifier does", async () => {
  const now = specTimestamp;
  const other = newSecret();
  const short = "whsec_" + Buffer.alloc(16).toString("base64");
  const signed = "malformed-payload"; // the signature matched: only the body is not an elector event
  const cases: [string, string | string[], Record<string, string>, string, number, WebhookFailure][] = [
    ["spec example", specSecret, headers(specID, specTimestamp, specSignature), specBody, now, signed],
    ["secret without prefix", specSecret.replace("whsec_", ""), headers(specID, specTimestamp, specSignature), specBody, now, signed],
    ["one of several secrets", [other, specSecret], headers(specID, specTimestamp, specSignature), specBody, now, signed],
    ["several secrets in one string", `${other} ${specSecret}`, headers(specID, specTimestamp, specSignature), specBody, now, signed],
    ["one of several signatures", specSecret, headers(specID, specTimestamp, "v1,AAAA " + specSignature), specBody, now, signed],
    ["unknown versions are skipped", specSecret, headers(specID, specTimestamp, "v1a,xyz v2,abc " + specSignature), specBody, now, signed],
    ["4m59s late", specSecret, headers(specID, specTimestamp, specSignature), specBody, now + 299, signed],
    ["6 minutes late", specSecret, headers(specID, specTimestamp, specSignature), specBody, now + 360, "timestamp-out-of-tolerance"],
    ["6 minutes early", specSecret, headers(specID, specTimestamp, specSignature), specBody, now - 360, "timestamp-out-of-tolerance"],
    ["body changed", specSecret, headers(specID, specTimestamp, specSignature), '{"test": 2432232315}', now, "no-match"],
    ["id changed", specSecret, headers(specID + "x", specTimestamp, specSignature), specBody, now, "no-match"],
    ["timestamp changed", specSecret, headers(specID, specTimestamp + 1, specSignature), specBody, now + 1, "no-match"],
    ["wrong secret", other, headers(specID, specTimestamp, specSignature), specBody, now, "no-match"],
    ["signature not base64", specSecret, headers(specID, specTimestamp, "v1,!!!"), specBody, now, "no-match"],
    ["no id", specSecret, headers("", specTimestamp, specSignature), specBody, now, "missing-headers"],
    ["no timestamp", specSecret, headers(specID, 0, specSignature), specBody, now, "missing-headers"],
    ["no signature", specSecret, headers(specID, specTimestamp, ""), specBody, now, "missing-headers"],
    ["timestamp not a number", specSecret, headers(specID, "1614265330.5", specSignature), specBody, now, "invalid-timestamp"],
    ["secret too short", short, headers(specID, specTimestamp, specSignature), specBody, now, "invalid-secret"],
    ["secret not base64", "whsec_%%%", headers(specID, specTimestamp, specSignature), specBody, now, "invalid-secret"],
    ["no secrets", [], headers(specID, specTimestamp, specSignature), specBody, now, "invalid-secret"],
  ];
  for (const [name, secrets, h, body, nowSec, want] of cases) {
    assert.equal(await check(secrets, h, body, nowSec), want, name);
  }
});

const event = (term: number, type = "leader.begin", id = "node-a") =>
  JSON.stringify({ type, timestamp: "2026-11-22T10:00:00.1Z", data: { election: "billing", term, candidate: { id, metadata: {} }, reason: "resigned" } });

function delivery(secret: string, id: string, body: string, ts = Math.floor(Date.now() / 1000)) {
  return { headers: new Headers(headers(id, ts, sign(secret, id, ts, body))), body };
}

test("verifyWebhook returns the event of a delivery signed as the gateway signs", async () => {
  const secret = newSecret(24);
  const d = delivery(secret, "7-1", event(3));
  const ev = await verifyWebhook(secret, d.headers, new TextEncoder().encode(d.body));
  assert.equal(ev.type, "leader.begin");
  assert.equal(ev.data.term, 3);
  // Node's req.headers: a plain object, any case.
  const plain = Object.fromEntries([...d.headers].map(([k, v]) => [k.toUpperCase(), v]));
  assert.equal((await verifyWebhook(secret, plain, d.body)).data.election, "billing");
  // Node 18 has no global Web Crypto: the caller passes node:crypto's.
  const subtle = webcrypto.subtle as unknown as VerifyOptions["subtle"];
  assert.equal((await verifyWebhook(secret, d.headers, d.body, { subtle })).data.term, 3);
});

test("the receiver drops duplicates and stale terms", async () => {
  const secret = newSecret();
  const r = new WebhookReceiver({ secrets: secret });
  const results = [];
  for (const [id, body] of [
    ["1", event(1)],
    ["2", event(1, "leader.end")],
    ["3", event(2, "leader.begin", "node-b")],
    ["3", event(2, "leader.begin", "node-b")],
    ["1b", event(1)], // a late event of term 1, under another id
  ] as const) {
    results.push((await r.receive(delivery(secret, id, body))).result);
  }
  assert.deepEqual(results, ["applied", "applied", "applied", "duplicate", "stale"]);
  const bad = await r.receive({ headers: delivery(secret, "4", event(3)).headers, body: event(3) + " " });
  assert.equal(bad.result, "invalid");
  assert.equal(bad.result === "invalid" && bad.error.code, "no-match");
});

test("a released id is acted on again", async () => {
  const secret = newSecret();
  const r = new WebhookReceiver({ secrets: secret, seen: new MemorySeenIds(), terms: new MemoryTermStore() });
  const d = delivery(secret, "9", event(1));
  assert.equal((await r.receive(d)).result, "applied");
  await r.release("9");
  assert.equal((await r.receive(d)).result, "applied");
  assert.equal((await r.receive(d)).result, "duplicate");
});

test("the in-memory stores are bounded", () => {
  const seen = new MemorySeenIds(2);
  assert.ok(seen.claim("a") && seen.claim("b") && seen.claim("c"));
  assert.ok(seen.claim("a"), "the oldest id was forgotten");
  assert.ok(!seen.claim("c"));
  const terms = new MemoryTermStore(1);
  assert.ok(terms.advance("x", 5));
  assert.ok(!terms.advance("x", 4));
  assert.ok(terms.advance("y", 1));
  assert.ok(terms.advance("x", 1), "x was forgotten for y");
});

test("webhookHandler answers what the receiver made of a delivery", async () => {
  const secret = newSecret();
  const acted: string[] = [];
  let fail = false;
  const handle = webhookHandler({
    secrets: [newSecret(), secret],
    onEvent(ev, { id }) {
      if (fail) throw new Error("the work did not start");
      acted.push(`${id} ${ev.type} ${ev.data.term}`);
      return { action: `${ev.data.candidate?.id} leads` };
    },
  });
  const post = (d: { headers: Headers; body: string }) =>
    handle(new Request("https://receiver.example/hook", { method: "POST", headers: d.headers, body: d.body }));
  const read = async (res: Response) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> });

  assert.deepEqual(await read(await post(delivery(secret, "1", event(1)))), {
    status: 200,
    body: { result: "applied", election: "billing", type: "leader.begin", term: 1, candidate: "node-a", action: "node-a leads" },
  });
  assert.equal((await read(await post(delivery(secret, "1", event(1))))).body.result, "duplicate");
  fail = true;
  assert.equal((await post(delivery(secret, "2", event(2)))).status, 500);
  fail = false;
  assert.equal((await read(await post(delivery(secret, "2", event(2))))).body.result, "applied", "a failed delivery is acted on when retried");
  assert.equal((await read(await post(delivery(secret, "0", event(1))))).body.result, "stale");
  assert.deepEqual(acted, ["1 leader.begin 1", "2 leader.begin 2"]);

  const tampered = delivery(secret, "5", event(5));
  assert.equal((await post({ headers: tampered.headers, body: event(6) })).status, 401);
  const notElector = delivery(secret, "6", '{"hello": "world"}');
  assert.equal((await post(notElector)).status, 400);
  assert.equal((await handle(new Request("https://receiver.example/hook"))).status, 405);
  const big = delivery(secret, "7", event(7) + " ".repeat(70_000));
  assert.equal((await post(big)).status, 413);
  const unconfigured = webhookHandler({ secrets: "", onEvent() {} });
  const d = delivery(secret, "8", event(8));
  assert.equal((await unconfigured(new Request("https://r.example/", { method: "POST", headers: d.headers, body: d.body }))).status, 500);
});

test("verifyWebhook accepts nothing but the signature of exactly the message", async () => {
  // As the Go verifier's fuzz test: random ids, timestamps, signatures and
  // bodies, signed right for some of them.
  let seed = 11;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  const pick = <T>(xs: T[]) => xs[rand(xs.length)];
  const body = event(1);
  for (let round = 0; round < 300; round++) {
    const id = pick(["", "a", specID, "x y", "\u00e9", "1-2"]);
    const ts = pick([String(specTimestamp), String(specTimestamp + rand(1000)), "-1", "x", "", "1614265330.0"]);
    const b = pick([body, body + " ", "", "{}", specBody]);
    const right = /^[0-9]+$/.test(ts) ? sign(specSecret, id, Number(ts), b) : "v1,AAAA";
    const sig = pick([right, `v1,AAAA ${right}`, right.replace("v1,", "v2,"), "v1,", right.slice(0, -4), specSignature, ""]);
    const h: Record<string, string> = { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig };
    let accepted = false;
    try {
      await verifyWebhook(specSecret, h, b, { now: () => specTimestamp * 1000 });
      accepted = true;
    } catch (err) {
      assert.ok(err instanceof WebhookVerificationError);
      accepted = err.code === "malformed-payload";
    }
    const want = id !== "" && /^[0-9]+$/.test(ts) && Math.abs(Number(ts) - specTimestamp) <= 300 && sig.split(" ").includes(right);
    assert.equal(accepted, want, `id ${JSON.stringify(id)} ts ${ts} sig ${sig} body ${JSON.stringify(b)}`);
  }
});
