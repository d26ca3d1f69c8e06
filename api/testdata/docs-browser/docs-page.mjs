// docs-page.mjs drives headless Chromium through elector's /docs page:
//
//   node docs-page.mjs BASE_URL ELECTION LEADER_ID SCREENSHOT.png
//
// It fails (exit 1) unless the page lists every operation and webhook of the
// gateway's /openapi.json, its "Try it out" answers GET
// /v1/elections/ELECTION/leader with a 200 whose body names LEADER_ID, it
// asks nothing of any host but the gateway, and the browser logs no error
// (a Content-Security-Policy violation is one). It writes a screenshot of
// the page showing that answer. api's TestDocsPageInBrowser runs it against
// a gateway it starts. It also tries the election's SSE stream, which the
// page reads for a few seconds.
import { chromium } from "playwright-core";

const [base, election, leaderID, screenshot] = process.argv.slice(2);
if (!screenshot) {
  console.error("usage: node docs-page.mjs BASE_URL ELECTION LEADER_ID SCREENSHOT.png");
  process.exit(2);
}
const origin = new URL(base).origin;
const failures = [];
const fail = (msg) => failures.push(msg);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
  timeout: 60_000,
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1280 } });
  page.setDefaultTimeout(30_000);
  const requested = [];
  page.on("request", (req) => {
    const url = req.url();
    requested.push(url);
    if (!url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin) {
      fail(`the page requested ${url}, which is not the gateway`);
    }
  });
  page.on("console", (msg) => {
    if (msg.type() === "error") fail(`browser console error: ${msg.text()}`);
  });
  page.on("pageerror", (err) => fail(`page error: ${err.message}`));

  await page.goto(`${base}/docs`, { waitUntil: "load" });
  await page.locator(".opblock").first().waitFor();

  // The page opens with a short introduction, not a wall of edge cases:
  // the first group of operations starts on a laptop's first screen.
  const fold = 520;
  const first = await page.locator(".opblock-tag-section").first().evaluate((e) => e.getBoundingClientRect().top + window.scrollY);
  if (first > fold) fail(`the first operations start ${Math.round(first)}px down, below the first ${fold}px`);
  const intro = await page.locator(".information-container").textContent();
  for (const edge of ["Transfer-Encoding", "Content-Length", "percent-escape"]) {
    if (intro.includes(edge)) fail(`the introduction above the operations goes into ${edge}`);
  }
  console.log(`introduction: the first operations start ${Math.round(first)}px down`);

  // Every operation and webhook of the spec is on the page.
  const spec = await (await page.request.get(`${base}/openapi.json`)).json();
  const shown = await page.$$eval(".opblock", (blocks) =>
    blocks.map((b) => {
      const method = b.querySelector(".opblock-summary-method")?.textContent.trim().toUpperCase();
      const path = b.querySelector(".opblock-summary-path")?.getAttribute("data-path") ||
        b.querySelector(".opblock-summary-path, .opblock-summary-operation-id")?.textContent.trim();
      return `${method} ${path}`;
    }),
  );
  const methods = ["get", "put", "post", "delete", "patch", "head", "options"];
  let want = 0;
  for (const [section, items] of [["paths", spec.paths], ["webhooks", spec.webhooks || {}]]) {
    for (const [path, item] of Object.entries(items)) {
      for (const m of methods.filter((m) => item[m])) {
        want++;
        const op = `${m.toUpperCase()} ${path}`;
        if (!shown.includes(op)) fail(`${section}: ${op} is not listed on the page`);
      }
    }
  }
  console.log(`listed: ${want} operations and webhooks of the spec found among ${shown.length} on the page`);

  // Try it out: GET /v1/elections/{election}/leader.
  const op = page.locator("#operations-elections-getLeader");
  await op.locator(".opblock-summary").first().click();
  await op.locator("button.try-out__btn").click();
  await op.locator('input[placeholder="election"]').fill(election);
  await op.locator("button.execute").click();
  const live = op.locator(".live-responses-table .response").first();
  await live.waitFor();
  const status = (await live.locator(".response-col_status").textContent()).trim();
  const body = await live.locator(".response-col_description pre").first().textContent();
  if (status !== "200") fail(`try it out: GET leader answered ${status}: ${body}`);
  if (!body.includes(`"${leaderID}"`)) fail(`try it out: the answer shown does not name ${leaderID}: ${body}`);
  console.log(`try it out: GET /v1/elections/${election}/leader → ${status} ${body.replace(/\s+/g, " ")}`);

  await op.evaluate((el) => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 140));
  await page.screenshot({ path: screenshot });

  // Try it out on an endless SSE stream: the page shows its first events.
  const sse = page.locator("#operations-events-streamElectionEvents");
  await sse.locator(".opblock-summary").first().click();
  await sse.locator("button.try-out__btn").click();
  await sse.locator('input[placeholder="election"]').fill(election);
  await sse.locator("button.execute").click();
  const stream = sse.locator(".live-responses-table .response").first();
  await stream.waitFor();
  const events = await stream.locator(".response-col_description pre").first().textContent();
  if (!events.includes("event: reset") || !events.includes(`"${leaderID}"`)) {
    fail(`try it out: the events stream shown has no reset naming ${leaderID}: ${events}`);
  }
  console.log(`try it out: GET /v1/elections/${election}/events showed ${events.split("\n")[0]} … event: reset`);
  console.log(`screenshot: ${screenshot}; ${requested.length} requests, all to ${origin}`);
} catch (err) {
  fail(`${err.name}: ${err.message}`);
} finally {
  await browser.close();
}
if (failures.length > 0) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
