// An elector webhook receiver as a Vercel Function (Node.js runtime, the
// Web handler signature). It verifies each delivery's Standard Webhooks
// signature with the standardwebhooks package against the secret
// ELECTOR_WEBHOOK_SECRET (several, space-separated, while one is rotated),
// drops duplicates by webhook-id and events of a term older than one it has
// acted on, and logs and answers what it did:
//
//   {"result":"applied","election":"billing","type":"leader.begin","term":2,
//    "candidate":"node-b","action":"node-b leads billing in term 2"}
//
// Deployed at /api/elector. The de-duplication state here is the function
// instance's memory, which a cold start forgets and which instances do not
// share; in production give createHandler a Store over a shared database
// (Redis SET NX for ids, a compare-and-set for the highest term).
import { Webhook } from "standardwebhooks";

/** Store remembers the webhook-ids acted on and the highest term per election. */
export interface Store {
  seen(id: string): Promise<boolean>;
  highest(election: string): Promise<number>;
  record(id: string, election: string, term: number): Promise<void>;
}

/** memoryStore keeps the state in this instance's memory. */
export function memoryStore(): Store {
  const ids = new Set<string>();
  const terms = new Map<string, number>();
  return {
    async seen(id) {
      return ids.has(id);
    },
    async highest(election) {
      return terms.get(election) ?? 0;
    },
    async record(id, election, term) {
      ids.add(id);
      if (term > (terms.get(election) ?? 0)) terms.set(election, term);
    },
  };
}

interface ElectorEvent {
  type: string;
  data: { election: string; term: number; candidate?: { id: string }; reason?: string };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** action says what the event means; a real receiver acts on it here. */
function action(ev: ElectorEvent): string {
  const { candidate, election, term, reason } = ev.data;
  switch (ev.type) {
    case "leader.begin":
      return `${candidate?.id} leads ${election} in term ${term}`;
    case "leader.end":
      return `${candidate?.id} stopped leading ${election} in term ${term} (${reason})`;
    case "leader.error":
      return `${candidate?.id} failed to begin leading ${election} in term ${term}`;
    default:
      return `${ev.type} in ${election}`;
  }
}

/** createHandler returns a receiver accepting deliveries signed with any of secrets. */
export function createHandler(secrets: string[], store: Store = memoryStore()) {
  const hooks = secrets.map((s) => new Webhook(s));
  return async function handle(request: Request): Promise<Response> {
    if (hooks.length === 0) return json(500, { error: "ELECTOR_WEBHOOK_SECRET is not set" });
    const body = await request.text(); // the exact bytes: verify before parsing
    const headers = {
      "webhook-id": request.headers.get("webhook-id") ?? "",
      "webhook-timestamp": request.headers.get("webhook-timestamp") ?? "",
      "webhook-signature": request.headers.get("webhook-signature") ?? "",
    };
    let ev: ElectorEvent | undefined;
    for (const wh of hooks) {
      try {
        ev = wh.verify(body, headers) as ElectorEvent;
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
    if (await store.seen(id)) return json(200, { result: "duplicate", ...out });
    if (term < (await store.highest(election))) {
      // A later leadership has begun: acting on this one would undo it.
      await store.record(id, election, 0);
      return json(200, { result: "stale", ...out });
    }
    const what = action(ev);
    console.log(what);
    await store.record(id, election, term);
    return json(200, { result: "applied", ...out, action: what });
  };
}

const secrets = (process.env.ELECTOR_WEBHOOK_SECRET ?? "").split(/\s+/).filter(Boolean);

/** POST is the function: elector's deliveries to /api/elector. */
export const POST = createHandler(secrets);
