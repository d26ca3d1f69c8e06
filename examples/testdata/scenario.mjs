// scenario.mjs: the test every JavaScript receiver under examples/ passes,
// with deliveries captured from a real elector gateway (the file
// ELECTOR_EXAMPLES_CAPTURE names; elector's TestCaptureDeliveriesForExamples
// writes it): node-a leads billing in term 1, resigns, node-b leads in
// term 2. The same checks as examples/lambda-go/receiver_test.go.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

/** loadCapture returns the captured deliveries, or null when there are none outside CI. */
export function loadCapture() {
  const path = process.env.ELECTOR_EXAMPLES_CAPTURE;
  if (!path) {
    if (process.env.CI) throw new Error("ELECTOR_EXAMPLES_CAPTURE is not set: .ci/run captures deliveries from a real gateway first");
    return null;
  }
  const c = JSON.parse(readFileSync(path, "utf8"));
  assert.equal(c.deliveries.length, 3, "three deliveries captured");
  return c;
}

function request(delivery, body = delivery.body, headers = delivery.headers) {
  return new Request("https://receiver.example/elector", {
    method: "POST",
    headers: { ...headers },
    body,
  });
}

async function send(handle, delivery, body, headers) {
  const res = await handle(request(delivery, body, headers));
  return { status: res.status, out: await res.json() };
}

/**
 * runScenario checks a receiver. newHandler(secret) returns a fresh
 * receiver (its own de-duplication state) as a function from a Request to
 * a Promise of a Response.
 */
export async function runScenario(t, capture, newHandler) {
  const d = capture.deliveries;

  await t.test("applies the deliveries in order, then sees duplicates", async () => {
    const handle = newHandler(capture.secret);
    const actions = [
      "node-a leads billing in term 1",
      "node-a stopped leading billing in term 1 (resigned)",
      "node-b leads billing in term 2",
    ];
    for (const [i, action] of actions.entries()) {
      const { status, out } = await send(handle, d[i]);
      assert.equal(status, 200, `delivery ${i}: ${JSON.stringify(out)}`);
      assert.equal(out.result, "applied");
      assert.equal(out.action, action);
    }
    const again = await send(handle, d[2]);
    assert.equal(again.status, 200);
    assert.equal(again.out.result, "duplicate");
  });

  await t.test("drops a term older than one it acted on", async () => {
    const handle = newHandler(capture.secret);
    assert.equal((await send(handle, d[2])).out.result, "applied");
    for (const i of [0, 1]) {
      const { status, out } = await send(handle, d[i]);
      assert.equal(status, 200);
      assert.equal(out.result, "stale", `delivery ${i} after term 2`);
    }
  });

  await t.test("refuses tampered, unsigned and foreign deliveries", async () => {
    const unsigned = { ...d[0].headers };
    delete unsigned["webhook-signature"];
    const stranger = "whsec_" + Buffer.alloc(32, 7).toString("base64");
    for (const [name, handle, body, headers] of [
      ["tampered body", newHandler(capture.secret), d[0].body + " ", d[0].headers],
      ["no signature", newHandler(capture.secret), d[0].body, unsigned],
      ["wrong secret", newHandler(stranger), d[0].body, d[0].headers],
    ]) {
      const { status, out } = await send(handle, d[0], body, headers);
      assert.equal(status, 401, `${name}: ${JSON.stringify(out)}`);
      assert.equal(out.result, undefined, name);
    }
  });
}
