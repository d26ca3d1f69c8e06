// Receiving elector's webhooks: the Standard Webhooks signature checked
// with Web Crypto, duplicates dropped by webhook-id, stale terms dropped
// per election, and an adapter for a Request → Response handler.

import type { ElectorEvent } from "./types.js";

/** WEBHOOK_TOLERANCE_SECONDS is how far webhook-timestamp may be from the receiver's clock, either way, by default. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;
/** WEBHOOK_MAX_BODY_BYTES bounds the body webhookHandler reads by default; elector's events are far smaller. */
export const WEBHOOK_MAX_BODY_BYTES = 64 << 10;

/** Why a delivery was refused. */
export type WebhookFailure =
  /** webhook-id, webhook-timestamp or webhook-signature is missing. */
  | "missing-headers"
  /** webhook-timestamp is not unix seconds. */
  | "invalid-timestamp"
  /** webhook-timestamp is further from the clock than the tolerance (a replay, or a clock far off). */
  | "timestamp-out-of-tolerance"
  /** A secret is not whsec_ and the base64 of 24 to 64 bytes, or none was given: the receiver is misconfigured. */
  | "invalid-secret"
  /** No v1 signature matches any secret: tampered, or signed with another secret. */
  | "no-match"
  /** The signature matches but the body is not an elector event. */
  | "malformed-payload";

/** WebhookVerificationError says why a delivery was refused. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  readonly code: WebhookFailure;

  constructor(code: WebhookFailure, message: string) {
    super(`elector: webhook refused: ${message}`);
    this.code = code;
  }
}

/** Headers as a Request has them, or as a plain object (Node's req.headers: lower-case names). */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/**
 * The part of Web Crypto's SubtleCrypto the receiver uses (HMAC-SHA256),
 * so that a program can pass one of its own without the DOM's types.
 */
export interface HmacSubtle {
  importKey(
    format: "raw",
    keyData: Uint8Array,
    algorithm: { name: "HMAC"; hash: "SHA-256" },
    extractable: boolean,
    keyUsages: "verify"[],
  ): Promise<object>;
  verify(algorithm: "HMAC", key: object, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

/** Options of verifyWebhook and WebhookReceiver. */
export interface VerifyOptions {
  /** How far webhook-timestamp may be from the clock, either way, in seconds. Default WEBHOOK_TOLERANCE_SECONDS. */
  toleranceSeconds?: number;
  /** The clock, in milliseconds since the epoch. Default Date.now. */
  now?: () => number;
  /**
   * The Web Crypto to sign with. Default globalThis.crypto.subtle, which
   * every platform has but Node 18 without --experimental-global-webcrypto:
   * there, pass `(await import("node:crypto")).webcrypto.subtle`.
   */
  subtle?: HmacSubtle;
}

const SECRET_PREFIX = "whsec_";
const encoder = new TextEncoder();

function header(h: HeaderSource, name: string): string {
  if (typeof (h as Headers).get === "function" && typeof (h as Headers).has === "function") return (h as Headers).get(name) ?? "";
  const rec = h as Record<string, string | string[] | undefined>;
  let v = rec[name];
  if (v === undefined) {
    const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
    v = key === undefined ? undefined : rec[key];
  }
  return Array.isArray(v) ? v.join(" ") : (v ?? "");
}

function fromBase64(s: string): Uint8Array | undefined {
  try {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return undefined;
  }
}

function bytes(body: string | Uint8Array | ArrayBuffer): Uint8Array {
  if (typeof body === "string") return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function subtleOf(options: VerifyOptions): HmacSubtle {
  const s = options.subtle ?? (globalThis as { crypto?: { subtle?: HmacSubtle } }).crypto?.subtle;
  if (!s) {
    throw new Error(
      "elector: Web Crypto is not available (globalThis.crypto.subtle); on Node 18 pass the option subtle: webcrypto.subtle of node:crypto, or run node with --experimental-global-webcrypto",
    );
  }
  return s;
}

/** secretList reads one secret, several separated by white space, or a list. */
function secretList(secrets: string | string[]): string[] {
  return (typeof secrets === "string" ? [secrets] : secrets).flatMap((s) => s.split(/\s+/)).filter((s) => s !== "");
}

/** secretKey returns the HMAC key bytes of a secret: the base64 after "whsec_" (which may be left out). */
function secretKey(secret: string): Uint8Array {
  const key = fromBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (!key) throw new WebhookVerificationError("invalid-secret", "a secret is not whsec_ and base64");
  if (key.length < 24 || key.length > 64) throw new WebhookVerificationError("invalid-secret", `a secret has ${key.length} bytes, want 24 to 64`);
  return key;
}

/** Keys caches the CryptoKeys of a list of secrets. */
class Keys {
  readonly #secrets: string[];
  #keys: Promise<object[]> | undefined;

  constructor(secrets: string | string[]) {
    this.#secrets = secretList(secrets);
  }

  get(subtle: HmacSubtle): Promise<object[]> {
    if (!this.#keys) {
      this.#keys = (async () => {
        if (this.#secrets.length === 0) throw new WebhookVerificationError("invalid-secret", "no secret given");
        const raw = this.#secrets.map(secretKey);
        return Promise.all(raw.map((k) => subtle.importKey("raw", k, { name: "HMAC", hash: "SHA-256" }, false, ["verify"])));
      })();
      // A misconfiguration is reported on every call, not cached as a success.
      this.#keys.catch(() => (this.#keys = undefined));
    }
    return this.#keys;
  }
}

async function verifyWith(keys: Keys, headers: HeaderSource, body: string | Uint8Array | ArrayBuffer, options: VerifyOptions): Promise<ElectorEvent> {
  const id = header(headers, "webhook-id");
  const tsText = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (id === "" || tsText === "" || sigs === "") {
    throw new WebhookVerificationError("missing-headers", "missing webhook-id, webhook-timestamp or webhook-signature");
  }
  if (!/^[0-9]+$/.test(tsText)) throw new WebhookVerificationError("invalid-timestamp", "webhook-timestamp is not unix seconds");
  const ts = Number(tsText);
  const tolerance = options.toleranceSeconds && options.toleranceSeconds > 0 ? options.toleranceSeconds : WEBHOOK_TOLERANCE_SECONDS;
  const now = Math.floor((options.now ?? Date.now)() / 1000);
  if (Math.abs(now - ts) > tolerance) {
    throw new WebhookVerificationError("timestamp-out-of-tolerance", `webhook-timestamp is more than ${tolerance}s from this clock`);
  }
  const subtle = subtleOf(options);
  const cryptoKeys = await keys.get(subtle);
  const payload = bytes(body);
  const prefix = encoder.encode(`${id}.${tsText}.`);
  const signed = new Uint8Array(prefix.length + payload.length);
  signed.set(prefix);
  signed.set(payload, prefix.length);
  let match = false;
  for (const sig of sigs.split(/\s+/)) {
    const comma = sig.indexOf(",");
    if (comma < 0 || sig.slice(0, comma) !== "v1") continue;
    const mac = fromBase64(sig.slice(comma + 1));
    if (!mac || mac.length !== 32) continue;
    for (const key of cryptoKeys) {
      // verify compares in constant time.
      if (await subtle.verify("HMAC", key, mac, signed)) match = true;
    }
    if (match) break;
  }
  if (!match) throw new WebhookVerificationError("no-match", "no signature matches");
  let ev: unknown;
  try {
    ev = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    ev = undefined;
  }
  const e = ev as ElectorEvent | undefined;
  if (!e || typeof e !== "object" || typeof e.type !== "string" || !e.data || typeof e.data.election !== "string" || typeof e.data.term !== "number") {
    throw new WebhookVerificationError("malformed-payload", "the body is not an elector event");
  }
  return e;
}

/**
 * verifyWebhook checks a delivery of elector's webhooks as Standard
 * Webhooks says, and returns its event: the headers must be present,
 * webhook-timestamp within the tolerance of the clock (either way), and
 * one of the v1 signatures of webhook-signature must be the HMAC-SHA256 of
 * "id.timestamp.body" under one of secrets (whsec_…; several, or several
 * separated by white space, while one is rotated). Pass the body exactly as
 * received, before parsing it. It throws a WebhookVerificationError whose
 * code says why.
 */
export function verifyWebhook(
  secrets: string | string[],
  headers: HeaderSource,
  body: string | Uint8Array | ArrayBuffer,
  options: VerifyOptions = {},
): Promise<ElectorEvent> {
  return verifyWith(new Keys(secrets), headers, body, options);
}

/**
 * SeenIds remembers the webhook-ids of deliveries acted on, for dropping
 * duplicates: elector delivers at least once, and a retry or another
 * replica sends an event again with the same webhook-id. Keep ids for a
 * day or so. Over a shared store, claim must be atomic (Redis SET NX, a
 * conditional insert).
 */
export interface SeenIds {
  /** claim records id and reports whether it was new. */
  claim(id: string): boolean | Promise<boolean>;
  /** release forgets id, so that a redelivery is acted on: for when acting on it failed. */
  release(id: string): void | Promise<void>;
}

/**
 * TermStore remembers the highest term seen per election, for dropping
 * stale events: an event of an older term than one already acted on must
 * not undo a newer one. Over a shared store, advance must be a
 * compare-and-set.
 */
export interface TermStore {
  /** advance records term for election and returns true, unless a higher term was recorded: then it returns false. */
  advance(election: string, term: number): boolean | Promise<boolean>;
}

/** MemorySeenIds keeps the last max ids in memory (10,000 by default): one process only, forgotten on restart. */
export class MemorySeenIds implements SeenIds {
  readonly #ids = new Set<string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = Math.max(1, max);
  }

  claim(id: string): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    if (this.#ids.size > this.#max) this.#ids.delete(this.#ids.values().next().value as string);
    return true;
  }

  release(id: string): void {
    this.#ids.delete(id);
  }
}

/** MemoryTermStore keeps the highest term of the last max elections in memory (10,000 by default). */
export class MemoryTermStore implements TermStore {
  readonly #terms = new Map<string, number>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = Math.max(1, max);
  }

  advance(election: string, term: number): boolean {
    const highest = this.#terms.get(election) ?? 0;
    if (term < highest) return false;
    this.#terms.delete(election); // most recently used last
    this.#terms.set(election, term);
    if (this.#terms.size > this.#max) this.#terms.delete(this.#terms.keys().next().value as string);
    return true;
  }
}

/** Options of a WebhookReceiver. */
export interface WebhookReceiverOptions extends VerifyOptions {
  /** The signing secrets (whsec_…): one, several while one is rotated, or several separated by white space. */
  secrets: string | string[];
  /** Where the ids of deliveries acted on are kept. Default: a MemorySeenIds. */
  seen?: SeenIds;
  /** Where the highest term per election is kept. Default: a MemoryTermStore. */
  terms?: TermStore;
}

/** What a WebhookReceiver made of a delivery. */
export type WebhookResult =
  /** Verified, new, not stale: act on it. */
  | { result: "applied"; id: string; event: ElectorEvent }
  /** Verified, but its webhook-id was seen before: acknowledge it and do nothing. */
  | { result: "duplicate"; id: string; event: ElectorEvent }
  /** Verified, but of an older term than one already seen for its election: acknowledge it and do nothing. */
  | { result: "stale"; id: string; event: ElectorEvent }
  /** Refused: answer 401 (or 500 for "invalid-secret", a misconfigured receiver). */
  | { result: "invalid"; error: WebhookVerificationError };

/** A delivery as a serverless platform hands it over, when it is not a Request. */
export interface WebhookDelivery {
  headers: HeaderSource;
  /** The body exactly as received. */
  body: string | Uint8Array | ArrayBuffer;
}

/**
 * WebhookReceiver verifies deliveries, drops duplicates by webhook-id and
 * drops events of a term older than one already seen for their election.
 * Give it shared stores when several instances receive (the defaults are
 * this instance's memory).
 */
export class WebhookReceiver {
  readonly #keys: Keys;
  readonly #options: VerifyOptions;
  readonly #seen: SeenIds;
  readonly #terms: TermStore;

  constructor(options: WebhookReceiverOptions) {
    this.#keys = new Keys(options.secrets);
    this.#options = { toleranceSeconds: options.toleranceSeconds, now: options.now, subtle: options.subtle };
    this.#seen = options.seen ?? new MemorySeenIds();
    this.#terms = options.terms ?? new MemoryTermStore();
  }

  /**
   * receive makes a result of a delivery. An "applied" delivery's id is
   * recorded as seen: if acting on it fails, call release(id) so that the
   * gateway's retry is acted on.
   */
  async receive(delivery: Request | WebhookDelivery): Promise<WebhookResult> {
    const body = typeof (delivery as Request).arrayBuffer === "function" ? await (delivery as Request).arrayBuffer() : (delivery as WebhookDelivery).body;
    return this.#receive(delivery.headers, body);
  }

  /** release forgets a delivery's id; see receive. */
  async release(id: string): Promise<void> {
    await this.#seen.release(id);
  }

  async #receive(headers: HeaderSource, body: string | Uint8Array | ArrayBuffer): Promise<WebhookResult> {
    let event: ElectorEvent;
    try {
      event = await verifyWith(this.#keys, headers, body, this.#options);
    } catch (err) {
      if (err instanceof WebhookVerificationError) return { result: "invalid", error: err };
      throw err;
    }
    const id = header(headers, "webhook-id");
    if (!(await this.#seen.claim(id))) return { result: "duplicate", id, event };
    // A later leadership has begun: acting on this one would undo it.
    if (!(await this.#terms.advance(event.data.election, event.data.term))) return { result: "stale", id, event };
    return { result: "applied", id, event };
  }
}

/** Options of webhookHandler. */
export interface WebhookHandlerOptions extends WebhookReceiverOptions {
  /**
   * Acts on an applied event. Whatever plain object it returns is added to
   * the JSON answer; a Response it returns is the answer. If it throws, the
   * delivery's id is released and the answer is a 500, so that the gateway
   * retries. A leader.begin to a candidate's own webhook must be answered
   * within its begin_timeout.
   */
  onEvent: (event: ElectorEvent, delivery: { id: string }) => unknown;
  /** The largest body read. Default WEBHOOK_MAX_BODY_BYTES. */
  maxBodyBytes?: number;
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/**
 * webhookHandler returns a Request → Response function for a serverless
 * platform (Cloudflare Workers, Vercel, Deno Deploy, Bun.serve, …). It
 * answers 200 with {"result": "applied" | "duplicate" | "stale",
 * "election", "type", "term", "candidate", …} for a verified delivery
 * (calling onEvent for an applied one), 401 for one that does not verify,
 * 400 for a verified body that is not an elector event, 405 for other
 * methods than POST, 413 for a body over maxBodyBytes, 500 when the secrets
 * are missing or invalid or onEvent throws.
 */
export function webhookHandler(options: WebhookHandlerOptions): (request: Request) => Promise<Response> {
  const receiver = new WebhookReceiver(options);
  const max = options.maxBodyBytes ?? WEBHOOK_MAX_BODY_BYTES;
  return async (request: Request): Promise<Response> => {
    if (request.method !== "POST") return json(405, { error: "POST elector's webhooks here" });
    if (Number(request.headers.get("content-length") ?? 0) > max) return json(413, { error: `body over ${max} bytes` });
    const body = await request.arrayBuffer();
    if (body.byteLength > max) return json(413, { error: `body over ${max} bytes` });
    const r = await receiver.receive({ headers: request.headers, body });
    if (r.result === "invalid") {
      switch (r.error.code) {
        case "invalid-secret":
          return json(500, { error: r.error.message });
        case "malformed-payload":
          return json(400, { error: r.error.message });
        default:
          return json(401, { error: r.error.message });
      }
    }
    const { election, term } = r.event.data;
    const out: Record<string, unknown> = { result: r.result, election, type: r.event.type, term, candidate: r.event.data.candidate?.id };
    if (r.result !== "applied") return json(200, out);
    let extra: unknown;
    try {
      extra = await options.onEvent(r.event, { id: r.id });
    } catch (err) {
      await receiver.release(r.id);
      return json(500, { error: `acting on the event failed: ${err instanceof Error ? err.message : String(err)}` });
    }
    if (extra instanceof Response) return extra;
    if (extra !== null && typeof extra === "object" && !Array.isArray(extra)) Object.assign(out, extra);
    return json(200, out);
  };
}
