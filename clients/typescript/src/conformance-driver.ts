// The conformance driver of the TypeScript client: it speaks the line
// protocol of clients/conformance/PROTOCOL.md on its standard input and
// output, doing what the suite tells it with this package and reporting
// what the package does. Run from the repository root as
//
//   node clients/typescript/dist/conformance-driver.js
//
// It is not part of the library: it uses Node's process object, reached
// through globalThis so that the library's build stays free of Node types.

import {
  Candidacy,
  Client,
  keepSession,
  ProblemError,
  TimeoutError,
  TransportError,
  verifyWebhook,
  type SessionKeeper,
  type Leadership,
  type LeadershipLostError,
  type Logger,
  type WatchEvent,
} from "./index.js";

interface NodeProcess {
  stdin: AsyncIterable<Uint8Array | string>;
  stdout: { write(s: string): boolean };
  stderr: { write(s: string): boolean };
  exit(code?: number): never;
}

const proc = (globalThis as unknown as { process: NodeProcess }).process;
const perf = (globalThis as unknown as { performance: { timeOrigin: number; now(): number } }).performance;

/** atMs is the wall clock in milliseconds since the epoch, with a fraction. */
function atMs(): number {
  return perf.timeOrigin + perf.now();
}

/** send writes one line: a reply or a report. */
function send(msg: Record<string, unknown>): void {
  proc.stdout.write(JSON.stringify(msg) + "\n");
}

function diag(line: string): void {
  proc.stderr.write(`ts-driver: ${line}\n`);
}

/** A command of the suite. */
interface Command {
  ref?: number;
  cmd?: string;
  [member: string]: unknown;
}

/** DriverError is a command the driver could not understand or carry out. */
class DriverError extends Error {}

function str(c: Command, name: string, required = true): string {
  const v = c[name];
  if (v === undefined && !required) return "";
  if (typeof v !== "string") throw new DriverError(`${c.cmd}: ${name} must be a string`);
  return v;
}

function gateways(c: Command): string[] {
  const g = c.gateways;
  if (!Array.isArray(g) || g.length === 0 || !g.every((x) => typeof x === "string")) throw new DriverError(`${c.cmd}: gateways must be a list of URLs`);
  return g as string[];
}

function logger(name: string): Logger {
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    diag(`${name} ${level} ${message}${fields ? " " + JSON.stringify(fields) : ""}`);
  return { debug() {}, info: line("info"), warn: line("warn"), error: line("error") };
}

const candidacies = new Map<string, { candidacy: Candidacy; done: Promise<void> }>();
const watches = new Map<string, { controller: AbortController; done: Promise<void> }>();
/** The running session keepers: closing is set once close began, and stops are the leads' stopped reports, each resolved once written. */
const keepers = new Map<string, { keeper: SessionKeeper; closing: boolean; stops: Promise<void>[] }>();

function start(c: Command): Record<string, unknown> {
  const name = str(c, "name");
  if (candidacies.has(name)) throw new DriverError(`start: ${name} already runs`);
  const apiToken = str(c, "api_token", false);
  const candidacy = new Candidacy({
    gateways: gateways(c),
    election: str(c, "election"),
    id: str(c, "candidate"),
    ttlMs: typeof c.ttl_ms === "number" ? c.ttl_ms : undefined,
    metadata: c.metadata as Record<string, unknown> | undefined,
    priority: typeof c.priority === "number" ? c.priority : undefined,
    clientOptions: apiToken ? { apiToken } : undefined,
    logger: logger(name),
    onStartedLeading(l: Leadership) {
      send({ event: "leading", name, term: l.term, at_ms: atMs() });
      const stopped = () => send({ event: "stopped", name, term: l.term, reason: (l.signal.reason as LeadershipLostError).reason, at_ms: atMs() });
      if (l.signal.aborted) stopped();
      else l.signal.addEventListener("abort", stopped, { once: true });
    },
    onCampaigned() {
      send({ event: "campaigned", name, at_ms: atMs() });
    },
  });
  const done = candidacy.run().catch((err: unknown) => send({ event: "log", message: `${name}: run ended: ${String(err)}` }));
  candidacies.set(name, { candidacy, done });
  return { margin_ms: candidacy.marginMs };
}

async function close(c: Command): Promise<Record<string, unknown>> {
  const name = str(c, "name");
  if (keepers.has(name)) {
    await closeKeeper(name);
    return {};
  }
  const entry = candidacies.get(name);
  if (!entry) throw new DriverError(`close: no candidacy ${name}`);
  await entry.candidacy.close();
  await entry.done;
  candidacies.delete(name);
  return {};
}

async function keepSessionCommand(c: Command): Promise<Record<string, unknown>> {
  const name = str(c, "name");
  if (keepers.has(name)) throw new DriverError(`keep_session: ${name} already runs`);
  if (typeof c.ttl_ms !== "number") throw new DriverError("keep_session: ttl_ms must be a number");
  const keeper = await keepSession(clientOf(c), { ttlMs: c.ttl_ms, logger: logger(name) });
  const entry = { keeper, closing: false, stops: [] as Promise<void>[] };
  keepers.set(name, entry);
  void keeper.done.then(() => {
    if (!entry.closing) send({ event: "session_ended", name, error: errorOf(keeper.signal.reason), at_ms: atMs() });
  });
  return { session: keeper.id, token: keeper.token, margin_ms: keeper.marginMs };
}

async function keeperCampaign(c: Command): Promise<unknown> {
  const name = str(c, "name");
  const entry = keepers.get(name);
  if (!entry) throw new DriverError(`keeper_campaign: no keeper ${name}`);
  const lead = str(c, "lead");
  const { status, sent } = await entry.keeper.campaign(str(c, "election"), { id: str(c, "candidate") });
  if (status.state === "leader") {
    const l = entry.keeper.lead(str(c, "election"), status.term, sent);
    send({ event: "leading", name: lead, term: status.term, at_ms: atMs() });
    entry.stops.push(
      new Promise<void>((resolve) => {
        const stopped = () => {
          const reason = l.signal.reason as LeadershipLostError;
          send({ event: "stopped", name: lead, term: status.term, reason: reason.cause === undefined ? reason.reason : `${reason.reason}: ${String(reason.cause)}`, at_ms: atMs() });
          resolve();
        };
        if (l.signal.aborted) stopped();
        else l.signal.addEventListener("abort", stopped, { once: true });
      }),
    );
  }
  return status;
}

/** closeKeeper closes the keeper's session and resolves once every lead's stopped report is written. */
async function closeKeeper(name: string): Promise<void> {
  const entry = keepers.get(name);
  if (!entry) return;
  entry.closing = true;
  keepers.delete(name);
  await entry.keeper.close();
  await Promise.all(entry.stops);
}

async function reportError(c: Command): Promise<Record<string, unknown>> {
  const name = str(c, "name");
  const entry = candidacies.get(name);
  if (!entry) throw new DriverError(`report_error: no candidacy ${name}`);
  await entry.candidacy.reportError(str(c, "reason", false));
  return {};
}

function clientOf(c: Command): Client {
  const apiToken = str(c, "api_token", false);
  return new Client(gateways(c)[0], apiToken ? { apiToken } : {});
}

function observed(name: string, ev: WatchEvent): Record<string, unknown> {
  if (ev.type === "reset") {
    return { event: "observed", name, id: ev.id, type: "reset", term: ev.snapshot.term, candidate: ev.snapshot.leader?.id ?? "", at_ms: atMs() };
  }
  return {
    event: "observed",
    name,
    id: ev.id,
    type: ev.type,
    term: ev.data.term,
    candidate: ev.data.candidate?.id ?? "",
    reason: ev.data.reason ?? "",
    at_ms: atMs(),
  };
}

async function watch(c: Command, leaders: boolean): Promise<Record<string, unknown>> {
  const name = str(c, "name");
  if (watches.has(name)) throw new DriverError(`${c.cmd}: ${name} already runs`);
  const controller = new AbortController();
  const client = clientOf(c);
  const election = str(c, "election");
  let done: Promise<void>;
  if (leaders) {
    const values = await client.observe(election, { signal: controller.signal });
    done = (async () => {
      for await (const l of values) send({ event: "leader", name, leader: l.id, term: l.term, at_ms: atMs() });
    })();
  } else {
    const events = await client.watch(election, { lastEventId: str(c, "last_event_id", false), signal: controller.signal });
    done = (async () => {
      for await (const ev of events) send(observed(name, ev));
    })();
  }
  done = done.catch((err: unknown) => send({ event: "log", message: `${name}: ${c.cmd} ended: ${String(err)}` }));
  watches.set(name, { controller, done });
  return {};
}

async function stop(c: Command): Promise<Record<string, unknown>> {
  const name = str(c, "name");
  const entry = watches.get(name);
  if (!entry) throw new DriverError(`stop: no watch ${name}`);
  entry.controller.abort();
  await entry.done;
  watches.delete(name);
  return {};
}

async function call(c: Command): Promise<unknown> {
  const client = clientOf(c);
  const args = (c.args ?? {}) as Record<string, unknown>;
  const a = (k: string): string => {
    const v = args[k];
    if (typeof v !== "string") throw new DriverError(`call ${c.op}: args.${k} must be a string`);
    return v;
  };
  const token = str(c, "token", false);
  switch (c.op) {
    case "campaign":
      return client.campaign(a("election"), {
        id: a("id"),
        ttl: args.ttl as string | undefined,
        metadata: args.metadata as Record<string, unknown> | undefined,
        priority: args.priority as number | undefined,
        session: args.session === undefined ? undefined : { id: a("session"), token },
      });
    case "open_session":
      return client.openSession(args.ttl as string | undefined);
    case "heartbeat_session":
      return client.heartbeatSession(a("session"), token);
    case "close_session":
      await client.closeSession(a("session"), token);
      return {};
    case "heartbeat":
      return client.heartbeat(a("election"), a("id"), token);
    case "resign":
      await client.resign(a("election"), a("id"), token);
      return {};
    case "report_error":
      return client.reportError(a("election"), a("id"), token, typeof args.reason === "string" ? args.reason : "");
    case "leader":
      return client.leader(a("election"));
    case "candidates":
      return client.candidates(a("election"));
    case "candidate":
      return client.candidate(a("election"), a("id"));
    case "election":
      return client.election(a("election"));
    case "elections":
      return client.elections();
    case "transfer":
      return client.transfer(a("election"), a("to"), token);
    case "handover":
      return client.handover(a("election"), a("id"), token);
    default:
      throw new DriverError(`unknown op ${JSON.stringify(c.op)}`);
  }
}

async function verify(c: Command): Promise<Record<string, unknown>> {
  const headers = c.headers;
  if (headers === null || typeof headers !== "object") throw new DriverError("verify_webhook: headers must be an object");
  try {
    const event = await verifyWebhook(str(c, "secret"), headers as Record<string, string>, str(c, "body"));
    return { valid: true, event };
  } catch (err) {
    return { valid: false, message: err instanceof Error ? err.message : String(err) };
  }
}

/** shutdown closes every candidacy and keeper (resigning) and every watch, once: every caller waits for the same. */
let shuttingDown: Promise<void> | undefined;
function shutdown(): Promise<void> {
  shuttingDown ??= closeEverything();
  return shuttingDown;
}

async function closeEverything(): Promise<void> {
  await Promise.all(
    [...candidacies.values()].map(async (e) => {
      await e.candidacy.close();
      await e.done;
    }),
  );
  candidacies.clear();
  await Promise.all([...keepers.keys()].map(closeKeeper));
  for (const w of watches.values()) w.controller.abort();
  await Promise.all([...watches.values()].map((w) => w.done));
  watches.clear();
}

function errorOf(err: unknown): Record<string, unknown> {
  if (err instanceof ProblemError) return { kind: "problem", type: err.type, status: err.status, class: err.name, message: err.message };
  if (err instanceof TransportError || err instanceof TimeoutError) return { kind: "transport", message: err.message };
  return { kind: "driver", message: err instanceof Error ? err.message : String(err) };
}

/** The commands of the protocol, each answering with its result. */
const commands: Record<string, (c: Command) => unknown> = {
  start,
  close,
  report_error: reportError,
  keep_session: keepSessionCommand,
  keeper_campaign: keeperCampaign,
  watch: (c) => watch(c, false),
  observe: (c) => watch(c, true),
  stop,
  call,
  verify_webhook: verify,
  exit: async (c) => {
    await shutdown();
    send({ ref: c.ref, ok: true, result: {} });
    proc.exit(0);
  },
};

async function handle(c: Command): Promise<void> {
  let result: unknown;
  try {
    const run = typeof c.cmd === "string" && Object.prototype.hasOwnProperty.call(commands, c.cmd) ? commands[c.cmd] : undefined;
    if (!run) throw new DriverError(`unknown command ${JSON.stringify(c.cmd)}`);
    result = await run(c);
  } catch (err) {
    send({ ref: c.ref, ok: false, error: errorOf(err) });
    return;
  }
  send({ ref: c.ref, ok: true, result: result ?? {} });
}

async function main(): Promise<void> {
  const decoder = new TextDecoder();
  let buf = "";
  const pending = new Set<Promise<void>>();
  for await (const chunk of proc.stdin) {
    buf += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line === "") continue;
      let c: Command;
      try {
        c = JSON.parse(line) as Command;
      } catch {
        send({ ok: false, error: { kind: "driver", message: `not JSON: ${line.slice(0, 200)}` } });
        continue;
      }
      const p = handle(c).finally(() => pending.delete(p));
      pending.add(p);
    }
  }
  // Standard input closed: let the commands under way answer (exit among
  // them), then close everything and leave.
  await Promise.all(pending);
  await shutdown();
  proc.exit(0);
}

main().catch((err: unknown) => {
  diag(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  proc.exit(1);
});
