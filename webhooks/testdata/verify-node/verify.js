// verify.js CAPTURED.json: verifies a webhook request captured from elector
// (see ../../capture_test.go) with the npm standardwebhooks package. It
// exits 0 when the signature verifies, and also checks that a tampered body
// and a wrong secret are refused.
"use strict";
const fs = require("fs");
const { Webhook } = require("standardwebhooks");

const file = process.argv[2];
if (!file) {
  console.error("usage: node verify.js CAPTURED.json");
  process.exit(2);
}
const c = JSON.parse(fs.readFileSync(file, "utf8"));
const headers = {
  "webhook-id": c.headers["webhook-id"],
  "webhook-timestamp": c.headers["webhook-timestamp"],
  "webhook-signature": c.headers["webhook-signature"],
};

function fails(fn) {
  try {
    fn();
    return false;
  } catch (e) {
    return true;
  }
}

let ok = true;
for (const secret of c.secrets) {
  const wh = new Webhook(secret);
  try {
    const payload = wh.verify(c.body, headers);
    console.log(`verified ${headers["webhook-id"]} (${payload.type}, term ${payload.data.term}) with one of ${c.secrets.length} secret(s)`);
  } catch (e) {
    console.error(`standardwebhooks refused elector's signature: ${e.message}`);
    ok = false;
  }
  if (!fails(() => wh.verify(c.body + " ", headers))) {
    console.error("a tampered body was accepted");
    ok = false;
  }
}
const stranger = new Webhook("whsec_" + Buffer.alloc(32, 7).toString("base64"));
if (!fails(() => stranger.verify(c.body, headers))) {
  console.error("a wrong secret was accepted");
  ok = false;
}
process.exit(ok ? 0 : 1);
