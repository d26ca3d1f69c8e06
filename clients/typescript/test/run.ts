// npm test runs this: it builds elector once (unless ELECTOR_BIN names a
// binary already), then runs every compiled *.test.js with node --test,
// two files at a time: they mostly wait on gateways and timers.

import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url)); // dist-test
const repo = resolve(here, "..", "..", "..");

let bin = process.env.ELECTOR_BIN ?? "";
if (bin === "") {
  // One binary per checkout, so that two checkouts testing at once do not
  // overwrite each other's.
  const out = join(tmpdir(), "elector-ts-tests-" + createHash("sha256").update(repo).digest("hex").slice(0, 12));
  mkdirSync(out, { recursive: true });
  bin = join(out, "elector");
  process.stderr.write(`building elector into ${bin}\n`);
  execFileSync("go", ["build", "-o", bin, "./cmd/elector"], { cwd: repo, stdio: "inherit" });
}

const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith(".test.js"))
  .filter((f) => only.length === 0 || only.some((o) => f.startsWith(o)))
  .map((f) => join(here, f));
const res = spawnSync(process.execPath, ["--test", "--test-reporter=spec", "--test-concurrency=2", ...files], {
  stdio: "inherit",
  env: { ...process.env, ELECTOR_BIN: bin },
});
process.exit(res.status ?? 1);
