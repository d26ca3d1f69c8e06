// An elector webhook receiver as a Cloudflare Worker. It verifies each
// delivery's Standard Webhooks signature with the standardwebhooks package
// against the secret ELECTOR_WEBHOOK_SECRET (several, space-separated,
// while one is rotated), drops duplicates by webhook-id and events of a
// term older than one it has acted on, and logs and answers what it did:
//
//   {"result":"applied","election":"billing","type":"leader.begin","term":2,
//    "candidate":"node-b","action":"node-b leads billing in term 2"}
//
// What it has seen lives in the KV namespace bound as SEEN (wrangler.toml);
// without one, in the isolate's memory, which Cloudflare may drop at any
// time and does not share between locations. KV is eventually consistent:
// for strict de-duplication across locations use a Durable Object.
import { Webhook } from "standardwebhooks";

const memory = new Map();

/** store is the de-duplication state: the SEEN KV namespace, else memory. */
function store(env) {
  if (env.SEEN) return env.SEEN;
  return {
    async get(key) {
      return memory.has(key) ? memory.get(key) : null;
    },
    async put(key, value) {
      memory.set(key, value);
    },
  };
}

function json(status, body) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** action says what the event means; a real receiver acts on it here. */
function action(ev) {
  const { candidate, election, term, reason } = ev.data;
  switch (ev.type) {
    case "leader.begin":
      return `${candidate.id} leads ${election} in term ${term}`;
    case "leader.end":
      return `${candidate.id} stopped leading ${election} in term ${term} (${reason})`;
    case "leader.error":
      return `${candidate.id} failed to begin leading ${election} in term ${term}`;
    default:
      return `${ev.type} in ${election}`;
  }
}

export default {
  async fetch(request, env) {
    if (request.method !== "POST") return json(405, { error: "POST elector's webhooks here" });
    const secrets = (env.ELECTOR_WEBHOOK_SECRET ?? "").split(/\s+/).filter(Boolean);
    if (secrets.length === 0) return json(500, { error: "ELECTOR_WEBHOOK_SECRET is not set" });
    const body = await request.text(); // the exact bytes: verify before parsing
    const headers = {
      "webhook-id": request.headers.get("webhook-id") ?? "",
      "webhook-timestamp": request.headers.get("webhook-timestamp") ?? "",
      "webhook-signature": request.headers.get("webhook-signature") ?? "",
    };
    let ev;
    for (const secret of secrets) {
      try {
        ev = new Webhook(secret).verify(body, headers);
        break;
      } catch {
        // try the next secret
      }
    }
    if (!ev) return json(401, { error: "signature does not verify" });
    if (!ev.type || !ev.data?.election) return json(400, { error: "not an elector event" });

    const id = headers["webhook-id"];
    const { election, term } = ev.data;
    const out = { election, type: ev.type, term, candidate: ev.data.candidate?.id };
    const seen = store(env);
    if (await seen.get(`id:${id}`)) return json(200, { result: "duplicate", ...out });
    const highest = Number((await seen.get(`term:${election}`)) ?? 0);
    // 1 day: elector retries for far less than that.
    const ttl = { expirationTtl: 86400 };
    if (term < highest) {
      // A later leadership has begun: acting on this one would undo it.
      await seen.put(`id:${id}`, "stale", ttl);
      return json(200, { result: "stale", ...out });
    }
    const what = action(ev);
    console.log(what);
    await seen.put(`term:${election}`, String(term));
    await seen.put(`id:${id}`, "applied", ttl);
    return json(200, { result: "applied", ...out, action: what });
  },
};
