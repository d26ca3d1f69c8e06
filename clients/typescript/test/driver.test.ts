// The conformance driver speaks clients/conformance/PROTOCOL.md: a short
// session against a real gateway, as the suite would drive it.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startGateway, waitFor, type Gateway } from "./helpers.js";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

let gw: Gateway;
before(async () => {
  gw = await startGateway();
});
after(() => gw?.stop());

type Line = Record<string, unknown>;

test("the driver speaks the protocol", async () => {
  const child = spawn(process.execPath, ["clients/typescript/dist/conformance-driver.js"], { cwd: repo, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const replies = new Map<number, Line>();
  const reports: Line[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    const msg = JSON.parse(line) as Line; // every line is one JSON object
    if (typeof msg.ref === "number") {
      assert.ok(!replies.has(msg.ref), `a second reply to ${msg.ref}`);
      replies.set(msg.ref, msg);
    } else {
      assert.equal(typeof msg.event, "string", line);
      reports.push(msg);
    }
  });
  let ref = 0;
  const send = async (cmd: Line): Promise<Line> => {
    const r = ++ref;
    child.stdin.write(JSON.stringify({ ref: r, ...cmd }) + "\n");
    await waitFor(`the reply to ${JSON.stringify(cmd)}`, () => replies.has(r), 15_000);
    const { ref: _ref, ...reply } = replies.get(r)!;
    return reply;
  };
  const report = (pred: (l: Line) => boolean) => reports.find(pred);
  const gateways = [gw.url];

  try {
    assert.deepEqual(await send({ cmd: "watch", name: "w", gateways, election: "drv" }), { ok: true, result: {} });
    assert.deepEqual(await send({ cmd: "observe", name: "o", gateways, election: "drv" }), { ok: true, result: {} });
    const started = await send({ cmd: "start", name: "a", gateways, election: "drv", candidate: "a", ttl_ms: 3000, metadata: { zone: "x" } });
    assert.deepEqual(started, { ok: true, result: { margin_ms: 500 } });
    await waitFor("a leads", () => !!report((l) => l.event === "leading" && l.name === "a" && l.term === 1));
    assert.ok(report((l) => l.event === "campaigned" && l.name === "a" && typeof l.at_ms === "number"));

    const leader = await send({ cmd: "call", op: "leader", gateways, args: { election: "drv" } });
    assert.equal((leader.result as Line).id, "a");
    assert.deepEqual((leader.result as Line).metadata, { zone: "x" });
    const camp = await send({ cmd: "call", op: "campaign", gateways, args: { election: "drv", id: "c", ttl: "1m" } });
    const token = (camp.result as Line).token as string;
    assert.ok(token);
    const mismatch = await send({ cmd: "call", op: "heartbeat", gateways, args: { election: "drv", id: "a" }, token });
    assert.deepEqual(mismatch.error && { ...(mismatch.error as Line), message: undefined }, {
      kind: "problem",
      type: "urn:elector:problem:candidate-token-mismatch",
      status: 403,
      class: "TokenMismatchError",
      message: undefined,
    });
    assert.deepEqual(await send({ cmd: "call", op: "resign", gateways, args: { election: "drv", id: "c" }, token }), { ok: true, result: {} });
    const opened = (await send({ cmd: "call", op: "open_session", gateways, args: { ttl: "30s" } })).result as Line;
    assert.match(opened.id as string, /^ses_/);
    const session = { session: opened.id };
    const inSession = await send({ cmd: "call", op: "campaign", gateways, args: { election: "drv-session", id: "s", ...session }, token: opened.token });
    assert.equal((inSession.result as Line).token, opened.token);
    const kept = await send({ cmd: "call", op: "heartbeat_session", gateways, args: session, token: opened.token });
    assert.deepEqual(((kept.result as Line).candidates as Line[]).map((c) => c.election), ["drv-session"]);
    assert.deepEqual(await send({ cmd: "call", op: "close_session", gateways, args: session, token: opened.token }), { ok: true, result: {} });
    const closed = await send({ cmd: "call", op: "heartbeat_session", gateways, args: session, token: opened.token });
    assert.equal((closed.error as Line).class, "SessionNotFoundError");
    const unknown = await send({ cmd: "call", op: "nope", gateways, args: {} });
    assert.equal((unknown.error as Line).kind, "driver");
    const bogus = await send({ cmd: "bogus" });
    assert.equal((bogus.error as Line).kind, "driver");
    const dead = await send({ cmd: "call", op: "leader", gateways: ["http://127.0.0.1:9"], args: { election: "drv" } });
    assert.equal((dead.error as Line).kind, "transport");

    const secret = "whsec_" + randomBytes(32).toString("base64");
    const body = JSON.stringify({ type: "leader.begin", timestamp: "2026-11-22T10:00:00Z", data: { election: "drv", term: 1, candidate: { id: "a" } } });
    const ts = String(Math.floor(Date.now() / 1000));
    const sig = "v1," + createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(`9.${ts}.${body}`).digest("base64");
    const headers = { "webhook-id": "9", "webhook-timestamp": ts, "webhook-signature": sig };
    const valid = await send({ cmd: "verify_webhook", secret, headers, body });
    assert.deepEqual(valid.result, { valid: true, event: JSON.parse(body) });
    const tampered = await send({ cmd: "verify_webhook", secret, headers, body: body.replace("drv", "dvr") });
    assert.equal((tampered.result as Line).valid, false);
    assert.match((tampered.result as Line).message as string, /no signature matches/);

    await send({ cmd: "start", name: "b", gateways, election: "drv", candidate: "b", ttl_ms: 3000 });
    await waitFor("b campaigned", () => !!report((l) => l.event === "campaigned" && l.name === "b"));
    assert.deepEqual(await send({ cmd: "close", name: "a" }), { ok: true, result: {} });
    const stopped = report((l) => l.event === "stopped" && l.name === "a");
    assert.equal(stopped?.reason, "resigned");
    assert.equal(stopped?.term, 1);
    await waitFor("b leads", () => !!report((l) => l.event === "leading" && l.name === "b" && l.term === 2));
    await waitFor("o saw b", () => !!report((l) => l.event === "leader" && l.name === "o" && l.leader === "b"));
    const leaders = reports.filter((l) => l.name === "o").map((l) => `${l.leader} ${l.term}`);
    assert.deepEqual(leaders.slice(-3), ["a 1", " 1", "b 2"]);
    assert.deepEqual(await send({ cmd: "stop", name: "w" }), { ok: true, result: {} });
    const ids = reports.filter((l) => l.name === "w" && l.type !== "reset").map((l) => l.id);
    assert.equal(new Set(ids).size, ids.length, `duplicate ids in ${ids}`);
    assert.equal(reports.find((l) => l.name === "w")?.type, "reset");

    assert.deepEqual(await send({ cmd: "exit" }), { ok: true, result: {} });
    assert.equal(await exited, 0, stderr);
    // exit closed b the way a program does on shutdown: it resigned.
    const res = await fetch(`${gw.url}/v1/elections/drv/leader`);
    assert.equal(res.status, 404);
  } finally {
    child.kill("SIGKILL");
  }
});
