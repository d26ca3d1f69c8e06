// An elector webhook receiver as a Cloudflare Worker, built on the webhook
// helper of elector's TypeScript client (clients/typescript). It verifies
// each delivery's Standard Webhooks signature against the secret
// ELECTOR_WEBHOOK_SECRET (several, space-separated, while one is rotated),
// drops duplicates by webhook-id and events of a term older than one it
// has acted on, and logs and answers what it did:
//
//   {"result":"applied","election":"billing","type":"leader.begin","term":2,
//    "candidate":"node-b","action":"node-b leads billing in term 2"}
//
// What it has seen lives in the KV namespace bound as SEEN (wrangler.toml);
// without one, in the isolate's memory, which Cloudflare may drop at any
// time and does not share between locations. KV is eventually consistent:
// for strict de-duplication across locations use a Durable Object.
import { MemorySeenIds, MemoryTermStore, webhookHandler } from "@electorhq/elector";

// 1 day: elector retries for far less than that.
const ttl = { expirationTtl: 86400 };

/** kvSeenIds keeps the webhook-ids acted on in a KV namespace. */
function kvSeenIds(kv) {
  return {
    async claim(id) {
      if ((await kv.get(`id:${id}`)) !== null) return false;
      await kv.put(`id:${id}`, "seen", ttl);
      return true;
    },
    async release(id) {
      await kv.delete(`id:${id}`);
    },
  };
}

/** kvTermStore keeps the highest term per election in a KV namespace. */
function kvTermStore(kv) {
  return {
    async advance(election, term) {
      if (term < Number((await kv.get(`term:${election}`)) ?? 0)) return false;
      await kv.put(`term:${election}`, String(term));
      return true;
    },
  };
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

const memory = { seen: new MemorySeenIds(), terms: new MemoryTermStore() };
// One handler per environment (the bindings do not change while an isolate lives).
const handlers = new WeakMap();

/** handlerFor builds the receiver of env: its secrets, its KV namespace or memory. */
function handlerFor(env) {
  let h = handlers.get(env);
  if (!h) {
    h = webhookHandler({
      secrets: env.ELECTOR_WEBHOOK_SECRET ?? "",
      seen: env.SEEN ? kvSeenIds(env.SEEN) : memory.seen,
      terms: env.SEEN ? kvTermStore(env.SEEN) : memory.terms,
      onEvent(ev) {
        const what = action(ev);
        console.log(what);
        return { action: what };
      },
    });
    handlers.set(env, h);
  }
  return h;
}

export default {
  fetch(request, env) {
    return handlerFor(env)(request);
  },
};
