// The repository README's TypeScript programs, as written: type-checked
// against the package's declarations, then run against a real gateway.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { Client, NoLeaderError } from "../dist/index.js";
import { startGateway, waitFor, type Gateway } from "./helpers.js";

const here = dirname(fileURLToPath(import.meta.url)); // dist-test
const readme = readFileSync(resolve(here, "..", "..", "..", "README.md"), "utf8");
// Inside the package, so that "@electorhq/elector" resolves to it by its own name.
const dir = join(here, "readme");

function block(name: string): string {
  const m = new RegExp("<!-- readme: " + name + " -->\\n```ts\\n([\\s\\S]*?)```").exec(readme);
  assert.ok(m, `README.md has no ${name} block`);
  return m[1];
}

/** compile type-checks files (names in dir) and writes their JavaScript beside them. */
function compile(files: string[]): void {
  const program = ts.createProgram(
    files.map((f) => join(dir, f)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2022.d.ts"],
      types: ["node"],
      strict: true,
      skipLibCheck: true,
    },
  );
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...program.emit().diagnostics];
  const text = ts.formatDiagnosticsWithColorAndContext(diagnostics, {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => dir,
    getNewLine: () => "\n",
  });
  assert.equal(diagnostics.length, 0, text);
}

let gw: Gateway;
before(async () => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "program.ts"), block("typescript"));
  writeFileSync(join(dir, "webhook.ts"), block("typescript-webhook"));
  compile(["program.ts", "webhook.ts"]);
  gw = await startGateway();
});
after(() => gw?.stop());

test("the README's program is at most 20 lines", () => {
  const lines = block("typescript").trimEnd().split("\n");
  assert.ok(lines.length <= 20, `${lines.length} lines`);
});

test("the README's program leads, and resigns on SIGTERM", async () => {
  const child = spawn(process.execPath, [join(dir, "program.js")], {
    cwd: dir,
    env: { ...process.env, ELECTOR_GATEWAYS: gw.url, HOSTNAME: "readme-node" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  try {
    await waitFor("the program leads", () => out.includes("billing, fenced by term 1"), 20_000);
    const c = new Client(gw.url);
    assert.equal((await c.leader("billing")).id, "readme-node");
    child.kill("SIGTERM");
    assert.equal(await exited, 0, `the program's output:\n${out}`);
    await assert.rejects(c.leader("billing"), NoLeaderError, "it resigned on the way out");
  } finally {
    child.kill("SIGKILL");
  }
});

test("the README's webhook receiver acts on a signed delivery only", async () => {
  const secret = "whsec_" + randomBytes(32).toString("base64");
  process.env.ELECTOR_WEBHOOK_SECRET = secret;
  const { POST } = (await import(join(dir, "webhook.js"))) as { POST: (r: Request) => Promise<Response> };
  const body = JSON.stringify({ type: "leader.begin", timestamp: new Date().toISOString(), data: { election: "billing", term: 3, candidate: { id: "node-a" } } });
  const ts = Math.floor(Date.now() / 1000);
  const sig = "v1," + createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(`42.${ts}.${body}`).digest("base64");
  const post = (b: string) =>
    POST(new Request("https://r.example/api", { method: "POST", headers: { "webhook-id": "42", "webhook-timestamp": String(ts), "webhook-signature": sig }, body: b }));
  assert.equal((await post(body + " ")).status, 401);
  const ok = await post(body);
  assert.equal(ok.status, 200);
  assert.equal(((await ok.json()) as { result: string }).result, "applied");
});
