// The library uses the web platform only: no Node module, no Node global,
// in what it ships (the build compiles it without Node's types, too); and
// its declarations serve a program without Node's types.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const dist = resolve(dirname(fileURLToPath(import.meta.url)), "..", "dist");

test("the library imports no Node module and touches no Node global", () => {
  const files = readdirSync(dist).filter((f) => f.endsWith(".js") && f !== "conformance-driver.js");
  assert.ok(files.includes("index.js"));
  for (const f of files) {
    const src = readFileSync(join(dist, f), "utf8");
    for (const banned of [/from\s+["']node:/, /import\(\s*["']node:/, /\brequire\(/, /\bprocess\./, /\bBuffer\b/, /\bsetImmediate\b/]) {
      assert.doesNotMatch(src, banned, `${f} uses ${banned}`);
    }
    for (const m of src.matchAll(/from\s+["']([^"']+)["']/g)) {
      assert.match(m[1], /^\.\/[a-z-]+\.js$/, `${f} imports ${m[1]}: only the package's own modules`);
    }
  }
  const tsconfig = JSON.parse(readFileSync(resolve(dist, "..", "tsconfig.json"), "utf8"));
  assert.deepEqual(tsconfig.compilerOptions.types, []);
  assert.deepEqual(tsconfig.compilerOptions.lib, ["ES2022"]);
});

test("the declarations compile for a program with the DOM's types and without Node's", () => {
  const dir = mkdtempSync(join(tmpdir(), "elector-consumer-"));
  try {
    mkdirSync(join(dir, "node_modules", "@electorhq"), { recursive: true });
    symlinkSync(resolve(dist, ".."), join(dir, "node_modules", "@electorhq", "elector"));
    writeFileSync(join(dir, "package.json"), '{"type": "module"}');
    writeFileSync(
      join(dir, "main.ts"),
      `import { Candidacy, Client, NoLeaderError, webhookHandler } from "@electorhq/elector";
const c = new Candidacy({ gateways: "http://127.0.0.1:8080", election: "e", id: "a", onStartedLeading: (l) => l.signal.aborted || l.term });
export const POST: (r: Request) => Promise<Response> = webhookHandler({ secrets: "", onEvent() {} });
new Client("http://x").leader("e").catch((e) => e instanceof NoLeaderError);
void c;
`,
    );
    // An older lib than the package's, no skipLibCheck: every declaration is checked.
    const program = ts.createProgram([join(dir, "main.ts")], {
      noEmit: true,
      strict: true,
      target: ts.ScriptTarget.ES2020,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2020.d.ts", "lib.dom.d.ts"],
      types: [],
    });
    const diags = ts.getPreEmitDiagnostics(program);
    assert.equal(diags.length, 0, ts.formatDiagnostics(diags, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => "\n" }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
