// An elector webhook receiver as a Vercel Function (Node.js runtime, the
// Web handler signature), built on the webhook helper of elector's
// TypeScript client (clients/typescript). It verifies each delivery's
// Standard Webhooks signature against the secret ELECTOR_WEBHOOK_SECRET
// (several, space-separated, while one is rotated), drops duplicates by
// webhook-id and events of a term older than one it has acted on, and logs
// and answers what it did:
//
//   {"result":"applied","election":"billing","type":"leader.begin","term":2,
//    "candidate":"node-b","action":"node-b leads billing in term 2"}
//
// Deployed at /api/elector. The de-duplication state here is the function
// instance's memory, which a cold start forgets and which instances do not
// share; in production give createHandler a Store over a shared database
// (Redis SET NX for ids, a compare-and-set for the highest term).
import { MemorySeenIds, MemoryTermStore, webhookHandler, type ElectorEvent, type SeenIds, type TermStore } from "@electorhq/elector";

/** Store remembers the webhook-ids acted on and the highest term per election. */
export interface Store {
  seen: SeenIds;
  terms: TermStore;
}

/** memoryStore keeps the state in this instance's memory. */
export function memoryStore(): Store {
  return { seen: new MemorySeenIds(), terms: new MemoryTermStore() };
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

/**
 * createHandler returns a receiver accepting deliveries signed with any of
 * secrets (none: every delivery is answered 500).
 */
export function createHandler(secrets: string[], store: Store = memoryStore()): (request: Request) => Promise<Response> {
  return webhookHandler({
    secrets,
    seen: store.seen,
    terms: store.terms,
    onEvent(ev) {
      const what = action(ev);
      console.log(what);
      return { action: what }; // added to the answer
    },
  });
}

const secrets = (process.env.ELECTOR_WEBHOOK_SECRET ?? "").split(/\s+/).filter(Boolean);

/** POST is the function: elector's deliveries to /api/elector. */
export const POST = createHandler(secrets);
