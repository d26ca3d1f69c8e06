// ui-page.mjs drives headless Chromium through elector's live view, /ui:
//
//   node ui-page.mjs BASE_URL OPERATOR_TOKEN VIEWER_TOKEN SIDECAR_TOKEN NODE_A_TOKEN CUT_URL OPEN_URL SCREENSHOT.png
//
// A POST to CUT_URL makes the gateway's test server close every connection
// to the gateway. OPEN_URL is another gateway, without API tokens, whose
// election "billing" has node-a leading: there the page must work without
// asking for a token.
// The gateway has API tokens; its election "billing" has node-a leading
// (candidate token NODE_A_TOKEN) and node-b in line, and "payroll" has one
// candidate. OPERATOR_TOKEN has the read and admin scopes, VIEWER_TOKEN only
// read, SIDECAR_TOKEN campaign. It fails (exit 1) unless the page asks for
// a token, then lists both elections, shows billing's leader and its
// candidates counting down; shows node-c joining and node-a resigning (both
// sent through the API here) without reloading; offers the operator a
// transfer and sends it, then shows the pending transfer (its event in
// words, its target marked, no other transfer offered) and cancels it,
// after which transfers are offered again; keeps the token across a
// reload; resumes a broken stream with Last-Event-ID and shows the event
// it missed; shows the viewer a pending transfer but offers it neither a
// transfer nor a cancellation; shows the token field's whole placeholder;
// shows the two holders of an election of two holders and sends a
// transfer naming the holder chosen; asks nothing of any host but the
// gateway; and logs no error but the refusals it provokes. api's TestUIPageInBrowser runs it against a gateway
// it starts.
import { chromium } from "playwright-core";

const [base, operator, viewer, sidecar, nodeAToken, cutURL, openURL, screenshot] = process.argv.slice(2);
if (!screenshot) {
  console.error("usage: node ui-page.mjs BASE_URL OPERATOR_TOKEN VIEWER_TOKEN SIDECAR_TOKEN NODE_A_TOKEN CUT_URL OPEN_URL SCREENSHOT.png");
  process.exit(2);
}
const failures = [];
const fail = (msg) => failures.push(msg);
const step = (msg) => console.log(`ok: ${msg}`);

// The API, as a candidate's sidecar calls it: the page must see the result
// on its own, from its event stream.
async function callAPI(method, path, body, headers = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${sidecar}`, "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}

// Refusals the test provokes, which Chromium logs as console errors: 401
// before a token is entered, 403 of the admin probe for the viewer, and
// 404 of the transfer while the gateway has no such route.
const refused = new Map(); // url → status
let cutting = false; // connections are cut on purpose while set
function expectedRefusal(url, status) {
  const path = new URL(url).pathname;
  return status === 401 ||
    (status === 403 && path.endsWith("/subscriptions")) ||
    (status === 404 && path.endsWith("/transfer"));
}

function watch(page, name, origin) {
  page.on("request", (req) => {
    const url = req.url();
    if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) {
      fail(`${name}: the page requested ${url}, which is not the gateway`);
    }
  });
  page.on("response", (res) => {
    if (res.status() >= 400) refused.set(res.url(), res.status());
  });
  page.on("console", (msg) => {
    if (msg.type() !== "error") return;
    const m = /^Failed to load resource: the server responded with a status of (\d+)/.exec(msg.text());
    const url = msg.location().url;
    if (m && refused.get(url) === Number(m[1]) && expectedRefusal(url, Number(m[1]))) return;
    if (cutting && msg.text().includes("net::ERR_")) return;
    fail(`${name}: browser console error: ${msg.text()} (${url})`);
  });
  page.on("pageerror", (err) => fail(`${name}: page error: ${err.message}`));
}

async function text(locator) {
  return (await locator.textContent()).trim();
}

async function waitForText(page, selector, want) {
  await page.waitForFunction(([s, w]) => {
    const e = document.querySelector(s);
    return e !== null && e.textContent.trim() === w;
  }, [selector, want]);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  timeout: 60_000,
});
try {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 660 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(20_000);
  watch(page, "operator", new URL(base).origin);

  // Without a token the gateway answers 401, and the page asks for one.
  await page.goto(`${base}/ui`, { waitUntil: "load" });
  await page.locator("#alert", { hasText: "needs an API token" }).waitFor();
  // The field shows its whole placeholder.
  const fits = await page.locator("#token-input").evaluate((input) => {
    const cs = getComputedStyle(input);
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const room = input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return { text: input.placeholder, need: ctx.measureText(input.placeholder).width, room };
  });
  if (!fits.text || fits.need > fits.room) fail(`the token field's placeholder ${JSON.stringify(fits.text)} needs ${fits.need}px of its ${fits.room}px`);
  step(`the token field shows its whole placeholder (${Math.round(fits.need)} of ${Math.round(fits.room)}px)`);
  await page.getByLabel("API token").fill(operator);
  await page.getByRole("button", { name: "Use token" }).click();
  step("asked for a token, and took it");

  // Both elections are listed, with their leaders.
  const billing = page.locator('#elections a[data-election="billing"]');
  await billing.filter({ hasText: "node-a leads, term 1" }).waitFor();
  await page.locator('#elections a[data-election="payroll"]').waitFor();
  step("lists billing and payroll");

  // billing, live: its leader, term, metadata and candidates.
  await billing.click();
  await page.locator('#stream-status[data-state="live"]').waitFor();
  await waitForText(page, "#leader .leader-id", "node-a");
  if (await text(page.locator("#leader .leader-term")) !== "1") fail("the leader's term is not 1");
  if (!(await text(page.locator("#leader"))).includes("addr=10.0.0.7:8080")) fail("the leader's metadata is not shown");
  await page.locator('tr[data-id="node-a"][data-state="leader"]').waitFor();
  await page.locator('tr[data-id="node-b"][data-state="follower"]').waitFor();
  step("shows node-a leading billing in term 1, node-b in line");

  // The expiry counts down (node-b sends no heartbeat).
  const expiry = 'tr[data-id="node-b"] [data-until]';
  const before = await text(page.locator(expiry));
  if (!/^\d+m \d\ds$|^\d+s$/.test(before)) fail(`node-b's expiry reads ${JSON.stringify(before)}`);
  await page.waitForFunction(([s, b]) => document.querySelector(s).textContent.trim() !== b, [expiry, before]);
  step(`node-b's expiry counts down from ${before} to ${await text(page.locator(expiry))}`);

  // Transitions made through the API show up live, without a reload.
  await page.evaluate(() => { window.sameDocument = true; });
  await callAPI("POST", "/v1/elections/billing/candidates", { id: "node-c", ttl: "2m", metadata: { zone: "c" } });
  await page.locator('tr[data-id="node-c"][data-state="follower"]').waitFor();
  await page.locator('#events li[data-type="candidate.joined"]', { hasText: "node-c joined" }).waitFor();
  step("node-c's campaign appears live");
  await callAPI("DELETE", "/v1/elections/billing/candidates/node-a", undefined, { "Elector-Candidate-Token": nodeAToken });
  await waitForText(page, "#leader .leader-id", "node-b");
  await waitForText(page, "#leader .leader-term", "2");
  await page.locator('tr[data-id="node-b"][data-state="leader"]').waitFor();
  await page.locator('tr[data-id="node-a"]').waitFor({ state: "detached" });
  await page.locator('#events li[data-type="leader.begin"]', { hasText: "node-b leads, term 2 after node-a (term 1, resigned)" }).waitFor();
  await page.locator('#events li[data-type="leader.end"]', { hasText: "node-a stopped leading, term 1: resigned" }).waitFor();
  await billing.filter({ hasText: "node-b leads, term 2" }).waitFor();
  if (!(await page.evaluate(() => window.sameDocument === true))) fail("the page reloaded");
  step("node-a's resignation and node-b's term 2 appear live, in the same document");

  // The operator may transfer: a button for each follower, none for the leader.
  await callAPI("POST", "/v1/elections/billing/candidates", { id: "node-e", ttl: "2m" });
  await page.locator('#election[data-admin="yes"]').waitFor();
  const toC = page.getByRole("button", { name: "Transfer leadership to node-c" });
  await toC.waitFor();
  await page.getByRole("button", { name: "Transfer leadership to node-e" }).waitFor();
  if (await page.getByRole("button", { name: "Transfer leadership to node-b" }).count() !== 0) {
    fail("a transfer to the leader itself is offered");
  }
  step("offers the operator a transfer to node-c");

  const [req] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith("/v1/elections/billing/transfer")),
    toC.click(),
  ]);
  const res = await req.response();
  if (req.method() !== "POST") fail(`the transfer was a ${req.method()}`);
  if (JSON.stringify(req.postDataJSON()) !== JSON.stringify({ to: "node-c" })) fail(`the transfer sent ${req.postData()}`);
  if (req.headers().authorization !== `Bearer ${operator}`) fail("the transfer was sent without the operator's token");
  if (res.status() !== 202) fail(`the transfer was answered ${res.status()}: ${await res.text()}`);
  // node-b sends no heartbeats, so it hands over only when its TTL runs
  // out: the transfer stays pending, and the page shows it.
  await page.locator("#action-status", { hasText: "Transfer to node-c requested" }).waitFor();
  await page.locator("#transfer", { hasText: "Transfer pending: node-b is asked to hand over to node-c" }).waitFor();
  await page.locator('tr[data-id="node-c"] .state-target', { hasText: "transfer target" }).waitFor();
  await page.locator('#events li[data-type="leader.transfer"]', { hasText: "node-b is asked to hand over to node-c, term 2" }).waitFor();
  if (await page.locator('#events li[data-type="leader.transfer"]', { hasText: "{" }).count() !== 0) fail("the leader.transfer event is shown as JSON");
  await page.locator("button.transfer").first().waitFor({ state: "detached" });
  if (await page.locator("button.transfer").count() !== 0) fail("a second transfer is offered while one is pending");
  step("shows the pending transfer to node-c, its event in words, and offers no other transfer");
  await page.locator('tr[data-id="node-e"] [data-until]').waitFor(); // read again after its event
  await page.mouse.move(0, 0);
  await page.screenshot({ path: screenshot });

  // The operator cancels it: node-b goes on leading, and transfers are
  // offered again.
  const [del] = await Promise.all([
    page.waitForRequest((r) => r.url().endsWith("/v1/elections/billing/transfer") && r.method() === "DELETE"),
    page.getByRole("button", { name: "Cancel the transfer to node-c" }).click(),
  ]);
  const delRes = await del.response();
  if (delRes.status() !== 200) fail(`the cancellation was answered ${delRes.status()}: ${await delRes.text()}`);
  if (del.headers().authorization !== `Bearer ${operator}`) fail("the cancellation was sent without the operator's token");
  await page.locator("#action-status", { hasText: "Transfer cancelled: node-b goes on leading." }).waitFor();
  await page.locator('#events li[data-type="leader.transfer_cancelled"]', { hasText: "the transfer to node-c was cancelled; the leader goes on" }).waitFor();
  await page.locator("#transfer").waitFor({ state: "hidden" });
  await toC.waitFor();
  await page.getByRole("button", { name: "Transfer leadership to node-e" }).waitFor();
  await waitForText(page, "#leader .leader-id", "node-b");
  step("cancels the transfer: node-b goes on leading, and transfers are offered again");

  // The token stays for the tab: a reload needs none.
  await page.reload({ waitUntil: "load" });
  await page.locator('#elections a[data-election="billing"]').waitFor();
  await page.locator("#leader .leader-id").waitFor();
  if (await page.locator("#token-form").isVisible()) fail("after a reload the page asks for the token again");
  step("keeps the token across a reload");

  // A broken stream resumes from the last event id: an event that happens
  // while the page is cut off is replayed, not lost. The gateway's test
  // cuts every connection to it; the page's reconnection is held here until
  // node-d has joined.
  await page.locator('#stream-status[data-state="live"]').waitFor();
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route((url) => url.pathname === "/v1/elections/billing/events", async (route) => {
    if (route.request().headers()["last-event-id"]) await held;
    await route.continue();
  });
  const resumed = page.waitForRequest((r) => r.url().endsWith("/v1/elections/billing/events") && r.headers()["last-event-id"]);
  resumed.catch(() => {}); // awaited below
  cutting = true;
  const cut = await fetch(cutURL, { method: "POST" });
  if (!cut.ok) throw new Error(`cutting the connections: ${cut.status}`);
  const again = await resumed;
  await callAPI("POST", "/v1/elections/billing/candidates", { id: "node-d", ttl: "2m" });
  release();
  await page.locator('#events li[data-type="candidate.joined"]', { hasText: "node-d joined" }).waitFor();
  await page.locator('tr[data-id="node-d"]').waitFor();
  await page.locator('#stream-status[data-state="live"]').waitFor();
  await page.unroute((url) => url.pathname === "/v1/elections/billing/events");
  cutting = false;
  step(`after a cut, the stream resumes with Last-Event-ID ${again.headers()["last-event-id"]} and shows the event it missed`);

  // A token without the admin scope sees a pending transfer, but gets no
  // transfer button, nor one to cancel it.
  const asked = await fetch(`${base}/v1/elections/billing/transfer`, {
    method: "POST", headers: { Authorization: `Bearer ${operator}`, "Content-Type": "application/json" }, body: JSON.stringify({ to: "node-c" }),
  });
  if (asked.status !== 202) throw new Error(`transfer for the viewer: ${asked.status} ${await asked.text()}`);
  const other = await browser.newContext({ viewport: { width: 1200, height: 760 } });
  const vpage = await other.newPage();
  vpage.setDefaultTimeout(20_000);
  watch(vpage, "viewer", new URL(base).origin);
  await vpage.goto(`${base}/ui#billing`, { waitUntil: "load" });
  await vpage.getByLabel("API token").fill(viewer);
  await vpage.getByRole("button", { name: "Use token" }).click();
  await vpage.locator("#leader .leader-id").waitFor();
  await vpage.locator('#election[data-admin="no"]').waitFor();
  await vpage.locator('tr[data-id="node-c"]').waitFor();
  if (await vpage.locator("button.transfer").count() !== 0) fail("the viewer is offered a transfer");
  if (await vpage.locator("thead .admin-only").isVisible()) fail("the viewer sees the actions column");
  await vpage.locator("#transfer", { hasText: "Transfer pending: node-b is asked to hand over to node-c" }).waitFor();
  if (await vpage.locator("button.cancel-transfer").count() !== 0) fail("the viewer is offered to cancel the transfer");
  step("shows the viewer the pending transfer, and offers it no transfer and no cancellation");

  // Without API tokens the page asks for none, and anybody may transfer.
  const open = await (await browser.newContext()).newPage();
  open.setDefaultTimeout(20_000);
  watch(open, "no tokens", new URL(openURL).origin);
  await open.goto(`${openURL}/ui#billing`, { waitUntil: "load" });
  await waitForText(open, "#leader .leader-id", "node-a");
  await open.locator('#election[data-admin="yes"]').waitFor();
  if (await open.locator("#alert").isVisible()) fail(`without tokens the page alerts: ${await text(open.locator("#alert"))}`);
  step("works on a gateway without tokens");

  // A leader that expires, in an election with a handover delay: nobody
  // leads, and the page counts the delay down.
  const at = (path) => `${openURL}${path}`;
  for (const [method, path, body, type] of [
    ["PATCH", "/v1/elections/batch", { handover_delay: "1m" }, "application/merge-patch+json"],
    ["POST", "/v1/elections/batch/candidates", { id: "node-x", ttl: "1s" }, "application/json"],
    ["POST", "/v1/elections/batch/candidates", { id: "node-y", ttl: "2m" }, "application/json"],
  ]) {
    const res = await fetch(at(path), { method, headers: { "Content-Type": type }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  }
  await open.goto(`${openURL}/ui#batch`, { waitUntil: "load" });
  await open.locator("#leader .none", { hasText: "holds the next leader back for" }).waitFor();
  const delay = await text(open.locator("#leader [data-until]"));
  if (!/^\d+s$/.test(delay)) fail(`the handover delay reads ${JSON.stringify(delay)}`);
  await open.locator('tr[data-id="node-y"][data-state="follower"]').waitFor();
  if (!(await text(open.locator("#settings"))).includes("handover delay 1m0s")) fail("the handover delay setting is not shown");
  step(`shows a handover delay holding node-y back for ${delay}`);

  // An election of two holders: both shown, each with its term; a
  // transfer names the holder chosen to hand over (the newest by default).
  for (const [method, path, body, type] of [
    ["PATCH", "/v1/elections/sched", { holders: 2 }, "application/merge-patch+json"],
    ["POST", "/v1/elections/sched/candidates", { id: "node-p", ttl: "2m" }, "application/json"],
    ["POST", "/v1/elections/sched/candidates", { id: "node-q", ttl: "2m" }, "application/json"],
    ["POST", "/v1/elections/sched/candidates", { id: "node-r", ttl: "2m" }, "application/json"],
  ]) {
    const res = await fetch(at(path), { method, headers: { "Content-Type": type }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  }
  await open.goto(`${openURL}/ui#sched`, { waitUntil: "load" });
  await waitForText(open, "#leader-title", "Holders (2 of 2)");
  await open.locator('#leader [data-holder="node-p"]', { hasText: "1" }).waitFor();
  await open.locator('#leader [data-holder="node-q"]', { hasText: "2" }).waitFor();
  await open.locator('tr[data-id="node-p"][data-state="leader"]', { hasText: "holds" }).waitFor();
  await open.locator('tr[data-id="node-q"][data-state="leader"]', { hasText: "holds" }).waitFor();
  if (!(await text(open.locator("#settings"))).includes("2 holders")) fail("the holders setting is not shown");
  await open.locator("#transfer-from-row").waitFor();
  if (await open.locator("#transfer-from").inputValue() !== "node-q") fail("the holder to hand over is not the newest by default");
  const [treq] = await Promise.all([
    open.waitForRequest((r) => r.url().endsWith("/v1/elections/sched/transfer")),
    open.getByRole("button", { name: "Transfer leadership to node-r" }).click(),
  ]);
  if (JSON.stringify(treq.postDataJSON()) !== JSON.stringify({ to: "node-r", from: "node-q" })) fail(`the transfer sent ${treq.postData()}`);
  await open.locator("#transfer", { hasText: "Transfer pending: node-q is asked to hand over to node-r" }).waitFor();
  step("shows both holders of sched with their terms, and transfers from the holder chosen");
} catch (err) {
  fail(`${err.name}: ${err.message}`);
} finally {
  await browser.close();
}
if (failures.length > 0) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
console.log(`screenshot: ${screenshot}`);
