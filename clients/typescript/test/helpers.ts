// Helpers of the tests: a real `elector serve` on a free port, a TCP proxy
// a test can cut or stall, and waiting on conditions with deadlines.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** freePort returns a loopback port nobody listens on. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** waitFor polls cond every 10 ms until it holds, and throws after timeoutMs naming what it waited for. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A running `elector serve`. */
export interface Gateway {
  url: string;
  /** pause stops the process (SIGSTOP); resume continues it. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
  log(): string;
}

/**
 * startGateway starts `elector serve` (ELECTOR_BIN, which test/run.ts
 * builds) on a free loopback port with a fresh data directory on the
 * embedded backend, and waits until it is ready.
 */
export async function startGateway(extraArgs: string[] = []): Promise<Gateway> {
  const bin = process.env.ELECTOR_BIN;
  if (!bin) throw new Error("ELECTOR_BIN is not set: run the tests with npm test, which builds elector");
  const dir = mkdtempSync(join(tmpdir(), "elector-ts-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ELECTOR_")));
  const logFile = join(dir, "serve.log");
  const { openSync, closeSync } = await import("node:fs");
  const fd = openSync(logFile, "a");
  const child: ChildProcess = spawn(
    bin,
    [
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--embedded-data-dir",
      join(dir, "data"),
      "--log-level",
      "warn",
      "--limits-writes-per-second",
      "0",
      "--webhooks-allow-private-networks",
      "--sse-retry",
      "100ms",
      ...extraArgs,
    ],
    { cwd: dir, env, stdio: ["ignore", fd, fd] },
  );
  closeSync(fd);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once("exit", () => ((exited = true), resolve())));
  const log = () => readFileSync(logFile, "utf8");
  try {
    await waitFor(
      `${url}/readyz`,
      async () => {
        if (exited) throw new Error(`elector serve exited:\n${log()}`);
        try {
          const res = await fetch(`${url}/readyz`);
          await res.arrayBuffer();
          return res.status === 200;
        } catch {
          return false;
        }
      },
      60_000,
    );
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return {
    url,
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    log,
    async stop() {
      if (!exited) {
        child.kill("SIGCONT");
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exit;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Proxy forwards TCP connections to a gateway. cut() drops every
 * connection and every new one at once (a dead replica); stall() holds
 * them open without passing a byte (a replica that stopped answering);
 * heal() goes back to forwarding.
 */
export class Proxy {
  readonly url: string;
  /** connections counts the connections forwarded. */
  connections = 0;
  /** bytesIn counts the bytes clients sent, also while stalled. */
  bytesIn = 0;
  #mode: "pass" | "cut" | "stall" = "pass";
  readonly #sockets = new Set<Socket>();
  readonly #server;

  private constructor(server: ReturnType<typeof createServer>, port: number) {
    this.#server = server;
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(target: string): Promise<Proxy> {
    const { hostname, port } = new URL(target);
    let proxy: Proxy | undefined;
    const server = createServer((client) => proxy!.#accept(client, hostname, Number(port)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    proxy = new Proxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  #accept(client: Socket, host: string, port: number): void {
    if (this.#mode === "cut") {
      client.destroy();
      return;
    }
    this.connections++;
    const upstream = connect(port, host);
    const pair = [client, upstream];
    for (const s of pair) {
      this.#sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        this.#sockets.delete(s);
        for (const o of pair) o.destroy();
      });
    }
    // Bytes pass only while the proxy passes; a stalled connection is
    // dropped when the proxy heals, since it has lost bytes.
    client.on("data", (b: Buffer) => {
      this.bytesIn += b.length;
      if (this.#mode === "pass") upstream.write(b);
    });
    upstream.on("data", (b) => (this.#mode === "pass" ? client.write(b) : undefined));
  }

  cut(): void {
    this.#mode = "cut";
    for (const s of this.#sockets) s.destroy();
  }

  stall(): void {
    this.#mode = "stall";
  }

  heal(): void {
    if (this.#mode === "stall") for (const s of this.#sockets) s.destroy();
    this.#mode = "pass";
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Journal records what callbacks did, in order. */
export class Journal {
  readonly lines: string[] = [];
  add(line: string): void {
    this.lines.push(line);
  }
  has(line: string): boolean {
    return this.lines.includes(line);
  }
}

/** A Logger that keeps every line, for tests that read what a candidacy logged. */
export function memoryLogger(): { lines: { level: string; message: string; fields: Record<string, unknown> }[]; debug: LogFn; info: LogFn; warn: LogFn; error: LogFn } {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at = (level: string): LogFn => (message, fields) => lines.push({ level, message, fields: fields ?? {} });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

type LogFn = (message: string, fields?: Record<string, unknown>) => void;
