// The Candidacy against a real `elector serve`: callbacks in order, resign
// on close, the step-down rule (also on a clock that jumps), failover,
// back-off honouring Retry-After, campaigning again after an expiry, and
// transfers.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  Candidacy,
  Client,
  ElectionNotFoundError,
  InvalidConfigError,
  InvalidRequestError,
  NoLeaderError,
  NoTransferPendingError,
  NotRunningError,
  stepDownMargin,
  type CandidacyOptions,
  type Leadership,
  type WatchEvent,
} from "../dist/index.js";
import { Journal, memoryLogger, Proxy, startGateway, waitFor, type Gateway } from "./helpers.js";

let gw: Gateway;
before(async () => {
  gw = await startGateway();
});
after(() => gw?.stop());

/** record makes the callbacks write to j: "started <term>", "returned <term> <reason>" when the signal aborts, "stopped <term> <reason>". */
function record(j: Journal, prefix = ""): Pick<CandidacyOptions, "onStartedLeading" | "onStoppedLeading"> {
  return {
    async onStartedLeading(l: Leadership) {
      j.add(`${prefix}started ${l.term}`);
      await new Promise((resolve) => l.signal.addEventListener("abort", resolve, { once: true }));
      j.add(`${prefix}returned ${l.term}`);
    },
    onStoppedLeading: (term, reason) => j.add(`${prefix}stopped ${term} ${reason}`),
  };
}

/** start runs a candidacy, closed when the test ends. */
function start(opts: CandidacyOptions, cleanup: Candidacy[]): { candidacy: Candidacy; done: Promise<void> } {
  const candidacy = new Candidacy(opts);
  cleanup.push(candidacy);
  return { candidacy, done: candidacy.run() };
}

describe("Candidacy", { concurrency: true }, () => {
  const open: Candidacy[] = [];
  after(() => Promise.all(open.map((c) => c.close())));

  test("callbacks come in order through an error and a resignation", async () => {
    const j = new Journal();
    const { candidacy: a, done } = start({ gateways: gw.url, election: "order", id: "a", ttlMs: 6000, errorTimeoutMs: 500, ...record(j) }, open);
    await waitFor("a leads", () => j.has("started 1"));
    await a.reportError("the work would not start");
    // After its error timeout, a campaigns again and, alone, leads again.
    await waitFor("a second leadership", () => j.has("started 2"));
    await a.close();
    await done;
    assert.deepEqual(j.lines, ["started 1", "returned 1", "stopped 1 error", "started 2", "returned 2", "stopped 2 resigned"]);
    await assert.rejects(new Client(gw.url).leader("order"), NoLeaderError, "resigned on close");
    await assert.rejects(a.reportError("late"), NotRunningError);
    await assert.rejects(a.run(), /runs once/);
  });

  test("close hands over at once, told by the event stream", async () => {
    // With this TTL, b's next scheduled heartbeat is minutes away: b can
    // only learn of its leadership from the event stream.
    const ttlMs = 600_000;
    const { candidacy: a } = start({ gateways: gw.url, election: "handover", id: "a", ttlMs }, open);
    await waitFor("a leads", () => a.standing.leading);
    const j = new Journal();
    const { candidacy: b } = start({ gateways: [gw.url], election: "handover", id: "b", ttlMs, ...record(j) }, open);
    await waitFor("b in line", () => b.standing.state === "follower");
    const followed = b.lastHeartbeat;
    await a.close();
    await waitFor("b leads", () => j.has("started 2"));
    assert.deepEqual(b.standing, { leading: true, state: "leader", term: 2, leader: "b", since: b.leadership!.since, reason: "elected" });
    assert.ok(b.lastHeartbeat > followed, "b leads only after a heartbeat confirmed it");
    assert.equal(b.leadership?.active, true);
  });

  test("a leader's signal ends before the gateway can promote another, and it campaigns again after the expiry", async () => {
    const proxy = await Proxy.start(gw.url);
    const ac = new AbortController();
    try {
      const events: WatchEvent[] = [];
      const stream = await new Client(gw.url).watch("stepdown", { signal: ac.signal });
      const watching = (async () => {
        for await (const ev of stream) events.push(ev);
      })();
      const ttlMs = 2000;
      let aEnded = 0; // when a's signal aborted, by the clock of this process
      let aDeadline = 0; // the step-down deadline it aborted at
      let aLastOK = 0; // the send time of a's last successful heartbeat then
      let bBegan = 0;
      let campaigns = 0;
      const { candidacy: a } = start(
        {
          gateways: proxy.url,
          election: "stepdown",
          id: "a",
          ttlMs,
          onStartedLeading: (l) =>
            l.signal.addEventListener("abort", () => {
              if (aEnded > 0) return;
              aEnded = Date.now();
              aDeadline = l.deadline;
              aLastOK = a.lastHeartbeat;
            }),
          onCampaigned: () => campaigns++,
        },
        open,
      );
      await waitFor("a leads", () => a.standing.leading);
      const { candidacy: b } = start({ gateways: gw.url, election: "stepdown", id: "b", ttlMs, onStartedLeading: () => (bBegan = Date.now()) }, open);
      await waitFor("b in line", () => b.standing.state === "follower");

      proxy.cut(); // a's heartbeats fail from now on; the gateway is told nothing
      await waitFor("the gateway expires a", () => events.some((e) => e.type === "leader.end" && e.data.reason === "expired"));
      const expired = events.find((e) => e.type === "leader.end")!;
      assert.equal(expired.type === "leader.end" && expired.data.candidate?.id, "a");
      await waitFor("b leads", () => bBegan > 0);
      assert.ok(aEnded > 0, "a's signal did not abort before b began");
      assert.equal(a.standing.reason, "heartbeat-timeout");
      // The rule: the deadline is TTL minus the margin after the send time
      // of the last successful heartbeat, which the gateway received later
      // and counts its TTL from.
      const margin = stepDownMargin(ttlMs);
      assert.equal(aDeadline, aLastOK + ttlMs - margin);
      const expiredAt = Date.parse(expired.timestamp);
      assert.ok(aDeadline < expiredAt, `a's deadline ${aDeadline}, the gateway expired it at ${expiredAt}`);
      // In this process, a's signal aborted before b began to lead. (When
      // it aborted by the wall clock depends on how busy the machine is;
      // the deadline does not.)
      assert.ok(aEnded < bBegan, `a stopped at ${aEnded}, b began at ${bBegan}`);
      process.stderr.write(
        `# TTL ${ttlMs}ms, margin ${margin}ms: a's signal aborted ${Math.round(aEnded - aDeadline)}ms after its step-down deadline, ${Math.round(expiredAt - aEnded)}ms before the gateway expired it\n`,
      );

      const campaigned = campaigns;
      proxy.heal(); // a's heartbeat is answered 404: it campaigns again, behind b
      await waitFor("a campaigns again", () => campaigns > campaigned && a.standing.state === "follower" && a.standing.leader === "b");
    } finally {
      ac.abort();
      await proxy.close();
    }
  });

  test("a leadership is over at the first look after the clock passed its deadline", async () => {
    const ttlMs = 6000;
    let skew = 0;
    const leaderships: Leadership[] = [];
    const j = new Journal();
    const { candidacy: a } = start(
      {
        gateways: gw.url,
        election: "paused",
        id: "a",
        ttlMs,
        now: () => Date.now() + skew,
        onStartedLeading: (l) => void leaderships.push(l),
        onStoppedLeading: (term, reason) => j.add(`stopped ${term} ${reason}`),
      },
      open,
    );
    await waitFor("a leads", () => leaderships.length === 1);
    const l = leaderships[0];
    assert.equal(l.active, true);
    assert.ok(l.deadline <= a.lastHeartbeat + ttlMs - stepDownMargin(ttlMs), `deadline ${l.deadline}, last heartbeat ${a.lastHeartbeat}`);

    // The process is paused past the step-down deadline and resumes: its
    // first look, before any timer or the loop has run, says stop.
    skew = ttlMs;
    assert.equal(l.active, false);
    assert.equal(l.signal.aborted, true);
    // The loop then ends that leadership; a heartbeat sent after the pause
    // confirms a new one before the candidate leads again.
    await waitFor("the leadership ended", () => j.lines.length > 0);
    assert.equal(j.lines[0], "stopped 1 heartbeat-timeout");
    await waitFor("a leads again after a heartbeat", () => leaderships.length >= 2);
    assert.ok(leaderships[1].deadline > l.deadline + ttlMs, "the new leadership's deadline comes from a heartbeat sent after the pause");
  });

  test("a dead first gateway fails over to the second", async () => {
    const dead = await Proxy.start(gw.url);
    dead.cut();
    try {
      const { candidacy: a } = start({ gateways: [dead.url, gw.url], election: "failover", id: "a", ttlMs: 3000 }, open);
      await waitFor("a leads through the second gateway", () => a.standing.leading);
    } finally {
      await dead.close();
    }
  });

  test("a leader moves off a gateway that hangs and keeps its leadership", async () => {
    const p1 = await Proxy.start(gw.url);
    const p2 = await Proxy.start(gw.url);
    try {
      const j = new Journal();
      const log = memoryLogger();
      const { candidacy: a } = start({ gateways: [p1.url, p2.url], election: "hang", id: "a", ttlMs: 6000, logger: log, ...record(j) }, open);
      await waitFor("a leads", () => a.standing.leading);
      p1.stall();
      // A heartbeat every TTL/3: the first after the stall hangs until its
      // deadline, the retry goes to p2, and the ones after it too.
      await waitFor("the switch to p2", () => log.lines.some((l) => l.message === "switched gateway" && l.fields.gateway === p2.url), 20_000);
      const switched = Date.now();
      const p1Bytes = p1.bytesIn;
      await waitFor("a heartbeat after the switch", () => a.lastHeartbeat > switched, 20_000);
      await waitFor("the next heartbeat", () => a.lastHeartbeat > switched + 2000, 20_000);
      assert.equal(p1.bytesIn, p1Bytes, "no request went to the hung gateway after the switch");
      assert.deepEqual(j.lines, ["started 1"], "a's leadership never ended");
    } finally {
      await Promise.all([p1.close(), p2.close()]);
    }
  });

  test("the back-off waits as long as Retry-After says", async () => {
    const limited = await startGateway(["--limits-writes-per-second", "0.5", "--limits-write-burst", "1"]);
    try {
      const c = new Client(limited.url);
      await c.campaign("other", { id: "x", ttl: "1m" });
      // The burst is spent: the next write is refused for two seconds.
      const refused = await c.campaign("other", { id: "y", ttl: "1m" }).catch((e: unknown) => e);
      assert.equal((refused as Error).name, "RateLimitedError");
      assert.equal((refused as { retryAfterMs: number }).retryAfterMs, 2000);
      const log = memoryLogger();
      const { candidacy: a } = start({ gateways: limited.url, election: "e", id: "a", ttlMs: 3000, logger: log }, open);
      await waitFor("a leads after its wait", () => a.standing.leading);
      const retry = log.lines.find((l) => l.message === "campaign failed; retrying with back-off");
      assert.ok(retry, "a rate-limited campaign was logged");
      assert.ok((retry.fields.retry_in_ms as number) >= 2000, `retried after ${retry.fields.retry_in_ms}ms, want the 2000 of Retry-After`);
      await a.close();
    } finally {
      await limited.stop();
    }
  });

  test("a transfer is handed over once the callbacks have returned", async () => {
    const ttlMs = 600_000;
    const j = new Journal();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let stopping = false;
    const { candidacy: a } = start(
      {
        gateways: gw.url,
        election: "transfer",
        id: "a",
        ttlMs,
        async onStartedLeading(l) {
          j.add(`a started ${l.term}`);
          await new Promise((r) => l.signal.addEventListener("abort", r, { once: true }));
          j.add(`a returned ${l.term}`);
        },
        async onStoppedLeading(term, reason) {
          stopping = true;
          await released; // a's end callback is slow: it returns when the test lets it
          j.add(`a stopped ${term} ${reason}`);
        },
      },
      open,
    );
    await waitFor("a leads", () => a.standing.leading);
    const { candidacy: b } = start({ gateways: gw.url, election: "transfer", id: "b", ttlMs, onStartedLeading: (l) => j.add(`b started ${l.term}`) }, open);
    await waitFor("b in line", () => b.standing.state === "follower");
    const cl = new Client(gw.url);
    const e = await cl.transfer("transfer", "b");
    assert.equal(e.transfer?.to, "b");
    await waitFor("a's end callback runs", () => stopping);
    const l = await cl.leader("transfer");
    assert.ok(l.id === "a" && l.term === 1, "a has not handed over while its callback runs");
    release();
    await waitFor("b leads", () => j.has("b started 2"));
    assert.deepEqual(j.lines, ["a started 1", "a returned 1", "a stopped 1 transferred", "b started 2"]);
    await waitFor("a follows b", () => !a.standing.leading && a.standing.state === "follower" && a.standing.leader === "b");
  });

  test("with explicitHandover the candidacy hands over when told", async () => {
    const ttlMs = 600_000;
    const { candidacy: a } = start({ gateways: gw.url, election: "explicit", id: "a", ttlMs, explicitHandover: true }, open);
    await waitFor("a leads", () => a.standing.leading);
    const cl = new Client(gw.url);
    const b = await cl.campaign("explicit", { id: "b", ttl: ttlMs });
    await assert.rejects(a.handover(), NoTransferPendingError);
    await waitFor("a leads again after the refused handover", () => a.standing.leading);
    await cl.transfer("explicit", "b");
    await waitFor("a stops leading", () => !a.standing.leading && a.standing.reason === "transferred");
    assert.equal((await cl.leader("explicit")).id, "a", "a holds the slot until told");
    await a.handover();
    const l = await cl.leader("explicit");
    assert.ok(l.id === "b" && l.term === 2, `leader ${l.id} in term ${l.term}`);
    await cl.resign("explicit", "b", b.token);
  });

  test("keepOnExit leaves the candidacy to expire", async () => {
    const j = new Journal();
    const { candidacy: a } = start({ gateways: gw.url, election: "keep", id: "a", ttlMs: 60_000, keepOnExit: true, ...record(j) }, open);
    await waitFor("a leads", () => a.standing.leading);
    await a.close();
    assert.deepEqual(j.lines, ["started 1", "returned 1", "stopped 1 resigned"]);
    assert.equal((await new Client(gw.url).leader("keep")).id, "a", "a leads at the gateway until its TTL runs out");
  });

  test("await using closes the candidacy at the end of the block", async () => {
    let done: Promise<void> | undefined;
    {
      await using a = new Candidacy({ gateways: gw.url, election: "using", id: "a", ttlMs: 60_000 });
      done = a.run();
      await waitFor("a leads", () => a.standing.leading);
    }
    await done;
    await assert.rejects(new Client(gw.url).leader("using"), NoLeaderError, "resigned at the end of the block");
  });

  test("a close before run ends the candidacy before it begins", { timeout: 20_000 }, async () => {
    const a = new Candidacy({ gateways: gw.url, election: "early", id: "a", ttlMs: 600_000 });
    open.push(a); // closed again at the end, should run() go on
    await a.close();
    await a.run(); // resolves at once: a run that campaigned would go on until closed
    assert.equal(a.running, false);
    await assert.rejects(a.run(), /runs once/);
    await assert.rejects(new Client(gw.url).candidates("early"), ElectionNotFoundError, "the gateway never saw a");
  });

  test("run rejects a campaign the gateway will keep refusing", async () => {
    const a = new Candidacy({ gateways: gw.url, election: "Not A Name", id: "a" });
    await assert.rejects(a.run(), InvalidRequestError);
  });
});

test("new Candidacy rejects a bad configuration", () => {
  const cases: [string, Partial<CandidacyOptions>][] = [
    ["no gateway", { gateways: [] }],
    ["bad gateway", { gateways: "127.0.0.1:8080" }],
    ["no election", { election: "" }],
    ["no id", { id: "" }],
    ["short TTL", { ttlMs: 1 }],
    ["negative error timeout", { errorTimeoutMs: -1 }],
  ];
  for (const [name, bad] of cases) {
    assert.throws(() => new Candidacy({ gateways: "http://x", election: "e", id: "a", ...bad } as CandidacyOptions), InvalidConfigError, name);
  }
});
