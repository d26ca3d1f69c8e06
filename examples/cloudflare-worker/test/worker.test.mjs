// Runs the shared receiver scenario against the Worker, with a stand-in for
// its KV binding, as `node --test` (see ../../testdata/scenario.mjs).
import { test } from "node:test";
import worker from "../src/worker.js";
import { loadCapture, runScenario } from "../../testdata/scenario.mjs";

/** A stand-in for a Workers KV namespace: get, put and delete of strings. */
class KV {
  #m = new Map();
  async get(key) {
    return this.#m.has(key) ? this.#m.get(key) : null;
  }
  async put(key, value) {
    this.#m.set(key, String(value));
  }
  async delete(key) {
    this.#m.delete(key);
  }
}

const capture = loadCapture();

test("Cloudflare Worker receiver", { skip: capture ? false : "ELECTOR_EXAMPLES_CAPTURE not set" }, async (t) => {
  await runScenario(t, capture, (secret) => {
    const env = { ELECTOR_WEBHOOK_SECRET: secret, SEEN: new KV() };
    return (request) => worker.fetch(request, env);
  });
});
