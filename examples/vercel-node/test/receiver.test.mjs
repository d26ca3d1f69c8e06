// Runs the shared receiver scenario against the compiled function (npm run
// build first), as `node --test` (see ../../testdata/scenario.mjs).
import { test } from "node:test";
import { createHandler } from "../dist/api/elector.js";
import { loadCapture, runScenario } from "../../testdata/scenario.mjs";

const capture = loadCapture();

test("Vercel Node receiver", { skip: capture ? false : "ELECTOR_EXAMPLES_CAPTURE not set" }, async (t) => {
  await runScenario(t, capture, (secret) => createHandler([secret]));
});
