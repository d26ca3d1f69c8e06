// Errors: the gateway's problem documents as typed errors, and the
// client's own.

/** PROBLEM_TYPE_PREFIX starts the type of every problem the gateway answers with. */
export const PROBLEM_TYPE_PREFIX = "urn:elector:problem:";

/** The members of a problem document, as ProblemError's constructor takes them. */
export interface ProblemInit {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  instance?: string;
  /** Extension members, such as `field`, `limit`, `transfer` or `handover_until`. */
  extensions?: Record<string, unknown>;
  /** The wait the answer's Retry-After header asked for, in milliseconds; 0 when none. */
  retryAfterMs?: number;
}

/**
 * ProblemError is an RFC 9457 problem document the gateway answered with.
 * Each stable problem type has a subclass (CandidateNotFoundError,
 * NoLeaderError, …), so `err instanceof NoLeaderError` tells them apart;
 * an answer that is not a problem document (a proxy's error page) is a
 * ProblemError whose `type` is "".
 */
export class ProblemError extends Error {
  /** The problem's type, `urn:elector:problem:<slug>`, or "". */
  readonly type: string;
  readonly title: string;
  /** The HTTP status of the answer. */
  readonly status: number;
  readonly detail: string;
  readonly instance: string;
  /** The extension members of the document. */
  readonly extensions: Record<string, unknown>;
  /** The wait Retry-After asked for (429 and 503 answers carry one), in milliseconds, or 0. */
  readonly retryAfterMs: number;

  constructor(init: ProblemInit) {
    const title = init.title || `HTTP ${init.status}`;
    super(init.detail ? `elector: ${title} (${init.status}): ${init.detail}` : `elector: ${title} (${init.status})`);
    this.name = "ProblemError";
    this.type = init.type ?? "";
    this.title = title;
    this.status = init.status;
    this.detail = init.detail ?? "";
    this.instance = init.instance ?? "";
    this.extensions = init.extensions ?? {};
    this.retryAfterMs = init.retryAfterMs ?? 0;
  }

  /** slug is the part of `type` after the prefix ("candidate-not-found"), or "". */
  get slug(): string {
    return this.type.startsWith(PROBLEM_TYPE_PREFIX) ? this.type.slice(PROBLEM_TYPE_PREFIX.length) : "";
  }
}

// One class per stable problem type (openapi.yaml's Problem schema). The
// ones Go's client folds into ErrInvalidRequest extend InvalidRequestError.

/** invalid-request (400): an input is invalid; `extensions.field` names it. */
export class InvalidRequestError extends ProblemError {
  override name = "InvalidRequestError";
}
/** malformed-json (400): the body is not one JSON object. */
export class MalformedJsonError extends InvalidRequestError {
  override name = "MalformedJsonError";
}
/** malformed-body (400): the body could not be read. */
export class MalformedBodyError extends InvalidRequestError {
  override name = "MalformedBodyError";
}
/** body-too-large (413). */
export class BodyTooLargeError extends InvalidRequestError {
  override name = "BodyTooLargeError";
}
/** unsupported-media-type (415): send JSON. */
export class UnsupportedMediaTypeError extends InvalidRequestError {
  override name = "UnsupportedMediaTypeError";
}
/** request-timeout (408): the body did not arrive in time. */
export class RequestTimeoutError extends ProblemError {
  override name = "RequestTimeoutError";
}
/** candidate-token-missing (400): no Elector-Candidate-Token header. */
export class CandidateTokenMissingError extends ProblemError {
  override name = "CandidateTokenMissingError";
}
/** candidate-token-mismatch (403): the token is not this candidate's. */
export class TokenMismatchError extends ProblemError {
  override name = "TokenMismatchError";
}
/** session-token-missing (400): no Elector-Session-Token header, on a session's call or a campaign in a session. */
export class SessionTokenMissingError extends ProblemError {
  override name = "SessionTokenMissingError";
}
/** session-token-mismatch (403): the token is not this session's. */
export class SessionTokenMismatchError extends ProblemError {
  override name = "SessionTokenMismatchError";
}
/**
 * session-not-found (404): the session is unknown, closed, or expired (its
 * heartbeats stopped for its TTL), and its candidacies with it: open
 * another and campaign again.
 */
export class SessionNotFoundError extends ProblemError {
  override name = "SessionNotFoundError";
}
/** session-in-election (409): the session already has a candidacy in the election; a session campaigns once per election. */
export class SessionInElectionError extends ProblemError {
  override name = "SessionInElectionError";
}
/** election-not-found (404). */
export class ElectionNotFoundError extends ProblemError {
  override name = "ElectionNotFoundError";
}
/** candidate-not-found (404): the candidacy resigned or expired; campaign again. */
export class CandidateNotFoundError extends ProblemError {
  override name = "CandidateNotFoundError";
}
/**
 * candidate-not-found (404) with a `revoked` member: the backend ended the
 * candidacy before the TTL of its last acknowledged heartbeat ran out (on
 * etcd, a lease revoked early), not because it was late. Still a
 * CandidateNotFoundError: campaign again, at the back of the line.
 * `revokedAt` is when a gateway saw the candidacy end, `expiresAt` when it
 * should have ended (undefined when the gateway sent no readable time).
 */
export class CandidacyRevokedError extends CandidateNotFoundError {
  override name = "CandidacyRevokedError";
  readonly revokedAt: Date | undefined;
  readonly expiresAt: Date | undefined;

  constructor(init: ProblemInit) {
    super(init);
    const r = revokedMember(this.extensions);
    this.revokedAt = r && time(r.at);
    this.expiresAt = r && time(r.expires_at);
  }
}

/** revokedMember is a problem's `revoked` object, if it has one. */
function revokedMember(ext: Record<string, unknown>): Record<string, unknown> | undefined {
  const r = ext.revoked;
  return r !== null && typeof r === "object" && !Array.isArray(r) ? (r as Record<string, unknown>) : undefined;
}

function time(v: unknown): Date | undefined {
  if (typeof v !== "string") return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? new Date(t) : undefined;
}

/** no-leader (404): nobody leads; `extensions.handover_until` while a handover delay runs. */
export class NoLeaderError extends ProblemError {
  override name = "NoLeaderError";
}
/** not-found (404): no such route. */
export class NotFoundError extends ProblemError {
  override name = "NotFoundError";
}
/** method-not-allowed (405). */
export class MethodNotAllowedError extends ProblemError {
  override name = "MethodNotAllowedError";
}
/** candidate-exists (409): a live candidate has this id. */
export class CandidateExistsError extends ProblemError {
  override name = "CandidateExistsError";
}
/** election-not-empty (409): the election still has candidates. */
export class ElectionNotEmptyError extends ProblemError {
  override name = "ElectionNotEmptyError";
}
/** limit-reached (429): a cap was reached; `extensions.limit` names it. */
export class LimitReachedError extends ProblemError {
  override name = "LimitReachedError";
}
/** rate-limited (429): slow down; see retryAfterMs. */
export class RateLimitedError extends ProblemError {
  override name = "RateLimitedError";
}
/** unauthenticated (401): no known API token (see ClientOptions.apiToken). */
export class UnauthenticatedError extends ProblemError {
  override name = "UnauthenticatedError";
}
/** forbidden (403): the API token lacks the scope or does not cover the election. */
export class ForbiddenError extends ProblemError {
  override name = "ForbiddenError";
}
/** webhook-destination-refused (422): a webhook URL on a non-public network. */
export class WebhookDestinationRefusedError extends ProblemError {
  override name = "WebhookDestinationRefusedError";
}
/** webhook-not-found (404): no such subscription. */
export class WebhookNotFoundError extends ProblemError {
  override name = "WebhookNotFoundError";
}
/** delivery-not-found (404). */
export class DeliveryNotFoundError extends ProblemError {
  override name = "DeliveryNotFoundError";
}
/** not-redeliverable (409): a gap record cannot be redelivered. */
export class NotRedeliverableError extends ProblemError {
  override name = "NotRedeliverableError";
}
/**
 * transfer-pending (409): a leader's heartbeat is refused because it is
 * asked to hand over (`extensions.transfer`): it must stop acting as
 * leader and hand over. Also a second transfer.
 */
export class TransferPendingError extends ProblemError {
  override name = "TransferPendingError";
}
/** not-a-follower (409): the target of a transfer is not a follower. */
export class NotFollowerError extends ProblemError {
  override name = "NotFollowerError";
}
/** not-leader (409): the candidate (or candidate token) is not the leader's. */
export class NotLeaderError extends ProblemError {
  override name = "NotLeaderError";
}
/** no-transfer-pending (409): a handover with no transfer pending. */
export class NoTransferPendingError extends ProblemError {
  override name = "NoTransferPendingError";
}
/** transfer-blocked (409): the backend cannot reorder the line for that transfer. */
export class TransferBlockedError extends ProblemError {
  override name = "TransferBlockedError";
}
/**
 * preempt-on (409): the transfer to cancel was started by the election's
 * preempt setting, which would start it again; turn preempt off first.
 */
export class PreemptOnError extends ProblemError {
  override name = "PreemptOnError";
}
/** webhooks-unavailable (501): this gateway runs without webhook delivery. */
export class WebhooksUnavailableError extends ProblemError {
  override name = "WebhooksUnavailableError";
}
/** not-supported (501): the backend cannot do this. */
export class NotSupportedError extends ProblemError {
  override name = "NotSupportedError";
}
/** internal (500): an unexpected error; the gateway's log has it. */
export class InternalError extends ProblemError {
  override name = "InternalError";
}
/**
 * backend-unavailable (503): the coordination backend cannot serve; also
 * election-contended (503): other writes to the election kept getting
 * there first, and nothing was written. Retry either.
 */
export class BackendUnavailableError extends ProblemError {
  override name = "BackendUnavailableError";
}

type ProblemClass = new (init: ProblemInit) => ProblemError;

const problemClasses: Record<string, ProblemClass> = {
  "invalid-request": InvalidRequestError,
  "malformed-json": MalformedJsonError,
  "malformed-body": MalformedBodyError,
  "body-too-large": BodyTooLargeError,
  "unsupported-media-type": UnsupportedMediaTypeError,
  "request-timeout": RequestTimeoutError,
  "candidate-token-missing": CandidateTokenMissingError,
  "candidate-token-mismatch": TokenMismatchError,
  "session-token-missing": SessionTokenMissingError,
  "session-token-mismatch": SessionTokenMismatchError,
  "session-not-found": SessionNotFoundError,
  "session-in-election": SessionInElectionError,
  "election-not-found": ElectionNotFoundError,
  "candidate-not-found": CandidateNotFoundError,
  "no-leader": NoLeaderError,
  "not-found": NotFoundError,
  "method-not-allowed": MethodNotAllowedError,
  "candidate-exists": CandidateExistsError,
  "election-not-empty": ElectionNotEmptyError,
  "limit-reached": LimitReachedError,
  "rate-limited": RateLimitedError,
  unauthenticated: UnauthenticatedError,
  forbidden: ForbiddenError,
  "webhook-destination-refused": WebhookDestinationRefusedError,
  "webhook-not-found": WebhookNotFoundError,
  "delivery-not-found": DeliveryNotFoundError,
  "not-redeliverable": NotRedeliverableError,
  "transfer-pending": TransferPendingError,
  "not-a-follower": NotFollowerError,
  "not-leader": NotLeaderError,
  "no-transfer-pending": NoTransferPendingError,
  "transfer-blocked": TransferBlockedError,
  "preempt-on": PreemptOnError,
  "webhooks-unavailable": WebhooksUnavailableError,
  "not-supported": NotSupportedError,
  internal: InternalError,
  "backend-unavailable": BackendUnavailableError,
  "election-contended": BackendUnavailableError,
};

/** problemError returns the ProblemError of init's type: its subclass when the type is a known one. */
export function problemError(init: ProblemInit): ProblemError {
  const type = init.type ?? "";
  const slug = type.startsWith(PROBLEM_TYPE_PREFIX) ? type.slice(PROBLEM_TYPE_PREFIX.length) : "";
  let cls = Object.prototype.hasOwnProperty.call(problemClasses, slug) ? problemClasses[slug] : ProblemError;
  if (cls === CandidateNotFoundError && revokedMember(init.extensions ?? {})) cls = CandidacyRevokedError;
  return new cls(init);
}

/** readProblem turns a non-2xx answer into a ProblemError. */
export async function readProblem(res: Response, now: number = Date.now()): Promise<ProblemError> {
  let body = "";
  try {
    body = await res.text();
  } catch {
    // The body was cut off: the status says enough.
  }
  if (body.length > 64 << 10) body = body.slice(0, 64 << 10);
  const retryAfterMs = parseRetryAfter(res.headers.get("retry-after") ?? "", now);
  const ct = res.headers.get("content-type") ?? "";
  if (ct.startsWith("application/problem+json") || ct.startsWith("application/json")) {
    let doc: unknown;
    try {
      doc = JSON.parse(body);
    } catch {
      doc = undefined;
    }
    if (doc !== null && typeof doc === "object" && !Array.isArray(doc)) {
      const { type, title, status, detail, instance, ...extensions } = doc as Record<string, unknown>;
      return problemError({
        type: typeof type === "string" ? type : "",
        title: typeof title === "string" ? title : res.statusText,
        status: typeof status === "number" && status > 0 ? status : res.status,
        detail: typeof detail === "string" ? detail : "",
        instance: typeof instance === "string" ? instance : "",
        extensions,
        retryAfterMs,
      });
    }
  }
  let detail = body.trim();
  if (detail.length > 200) detail = detail.slice(0, 200) + "…";
  return new ProblemError({ status: res.status, title: res.statusText, detail, retryAfterMs });
}

/**
 * parseRetryAfter reads a Retry-After header, delay-seconds or an
 * HTTP-date (RFC 9110, section 10.2.3), as a wait in milliseconds from
 * now; 0 when absent, malformed or past.
 */
export function parseRetryAfter(value: string, now: number): number {
  const v = value.trim();
  if (v === "") return 0;
  if (/^[0-9]+$/.test(v)) return Number(v) * 1000;
  if (!/[a-z]/i.test(v)) return 0; // "-3", "1.5": not a date either
  const t = Date.parse(v);
  return Number.isFinite(t) && t > now ? t - now : 0;
}

/**
 * TransportError: no answer came from the gateway (it refused the
 * connection, the connection broke, the name did not resolve). `cause`
 * holds what fetch threw.
 */
export class TransportError extends Error {
  override name = "TransportError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** TimeoutError: a call's timeoutMs passed before the answer came. */
export class TimeoutError extends Error {
  override name = "TimeoutError";
}

/** InvalidConfigError: what is wrong with the options of a Candidacy or a Client. */
export class InvalidConfigError extends TypeError {
  override name = "InvalidConfigError";
}

/** NotRunningError: Candidacy.reportError or handover while the candidacy does not run. */
export class NotRunningError extends Error {
  override name = "NotRunningError";
  constructor() {
    super("elector: the candidacy is not running");
  }
}

/**
 * SessionEndedError is why a SessionKeeper ended when the program ended it:
 * the reason of its signal after close() or stop(), and the cause of the
 * LeadershipLostError ("session-ended") of each of its leads.
 */
export class SessionEndedError extends Error {
  override name = "SessionEndedError";
}
