// The library uses the web platform only: no Node module, no Node global,
// in what it ships (the build compiles it without Node's types, too).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

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
