// Client: one method per call of the HTTP API v1.

import { Scope } from "./backoff.js";
import { InvalidConfigError, readProblem, TimeoutError, TransportError } from "./errors.js";
import type {
  CampaignRequest,
  CampaignResult,
  Candidates,
  CandidateStatus,
  Deliveries,
  Delivery,
  Election,
  Elections,
  Health,
  LeaderDocument,
  ObservedLeader,
  OpenedSession,
  Session,
  SettingsPatch,
  Subscription,
  SubscriptionRequest,
  Subscriptions,
  SubscriptionWithSecret,
} from "./types.js";
import { EventStream, observeLeaders, type WatchOptions } from "./watch.js";

/** DEFAULT_USER_AGENT is sent where the platform lets a program set User-Agent. */
export const DEFAULT_USER_AGENT = "elector-client-ts";
/** DEFAULT_RECONNECT_DELAY_MS: how long a watch waits before reconnecting until the stream's retry hint says otherwise. */
export const DEFAULT_RECONNECT_DELAY_MS = 2000;
/** MAX_RECONNECT_DELAY_MS caps a watch's back-off between failed reconnections. */
export const MAX_RECONNECT_DELAY_MS = 30_000;
/**
 * DEFAULT_WATCH_IDLE_TIMEOUT_MS: how long a watch's connection may stay
 * silent before it is taken for dead and reopened. The gateway sends a
 * comment every 15 s (sse.keep_alive) on a stream with no events.
 */
export const DEFAULT_WATCH_IDLE_TIMEOUT_MS = 60_000;
/** TOKEN_HEADER carries a candidate's token on heartbeat, resign, error report and handover. */
export const TOKEN_HEADER = "Elector-Candidate-Token";
/** SESSION_TOKEN_HEADER carries a session's token on its heartbeat and close, and on a campaign in the session. */
export const SESSION_TOKEN_HEADER = "Elector-Session-Token";

/** The fetch a Client calls: the platform's, or one of your own (a Workers service binding, a test double). */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/** A logger: console fits. Only Candidacy and watches log. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A Logger that discards everything: the default. */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Options of a Client. */
export interface ClientOptions {
  /** Sent as "Authorization: Bearer <apiToken>", for gateways that require API tokens. */
  apiToken?: string;
  /** The User-Agent header, where the platform allows it. Default DEFAULT_USER_AGENT. */
  userAgent?: string;
  /** The fetch to call. Default: the global fetch. */
  fetch?: Fetch;
  /** How long a watch waits before reconnecting until the stream's retry hint says otherwise. Default DEFAULT_RECONNECT_DELAY_MS. */
  reconnectDelayMs?: number;
  /**
   * How long a watch's connection may go without a byte (an event or the
   * gateway's keep-alive comment) before the watch closes it and
   * reconnects, resuming after the last event: a peer that vanished
   * without closing the connection leaves it silent. Keep it well above
   * the gateway's sse.keep_alive (15 s by default). 0: never. Default
   * DEFAULT_WATCH_IDLE_TIMEOUT_MS.
   */
  watchIdleTimeoutMs?: number;
  /** Receives a watch's reconnections. Default: silent. */
  logger?: Logger;
}

/** Options of one call. */
export interface CallOptions {
  /** Ends the call when it aborts; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Ends the call with a TimeoutError when no answer came within this many milliseconds. Default: no limit. */
  timeoutMs?: number;
}

/**
 * The options of the reads of elections (leader, election, elections,
 * candidates, candidate).
 */
export interface ReadOptions extends CallOptions {
  /**
   * "linearizable" (the gateway's default): the answer reflects every write
   * acknowledged before the call began, on any replica. "local": the replica
   * answers from its own copy as it is, without asking the backend first; it
   * may lag another replica's write by the replica's watch delay, so act on
   * it only with its fencing term.
   */
  consistency?: "linearizable" | "local";
}

/** readSpec is how a read of elections is made with options. */
function readSpec(options?: ReadOptions): RequestSpec {
  return { ...options, query: { consistency: options?.consistency } };
}

/** The options of Client.transfer. */
export interface TransferOptions extends CallOptions {
  /** With several holders, the holder that should hand over. */
  from?: string;
}

/** How a request is made. */
interface RequestSpec extends CallOptions {
  body?: unknown;
  contentType?: string;
  token?: string;
  query?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
}

/**
 * durationString writes milliseconds as a Go duration string ("10s",
 * "1500ms"), as the API reads them.
 */
export function durationString(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new InvalidConfigError(`elector: duration ${ms} ms is not a non-negative number`);
  const whole = Math.round(ms);
  return whole % 1000 === 0 ? `${whole / 1000}s` : `${whole}ms`;
}

/** sessionHeaders sends a session's token, if there is one. */
function sessionHeaders(token: string): Record<string, string> {
  return token ? { [SESSION_TOKEN_HEADER]: token } : {};
}

/** segment escapes one path segment as Go's url.PathEscape does for the characters ids and names may hold. */
function segment(s: string): string {
  return encodeURIComponent(s).replace(/%(3A|40|24|26|2B|3D)/gi, (m) => decodeURIComponent(m));
}

/**
 * Client talks to one elector gateway (or a load balancer in front of
 * several replicas). Every call returns the API's JSON document as
 * openapi.yaml describes it, in its field names; an answer other than 2xx
 * rejects with a ProblemError subclass (NoLeaderError,
 * CandidateNotFoundError, …), no answer with a TransportError (or a
 * TimeoutError, or the reason of the call's signal).
 *
 * Tokens are sent only in the Elector-Candidate-Token and
 * Elector-Session-Token headers and never appear in errors or logs.
 */
export class Client {
  /** The gateway's base URL, without a trailing slash. */
  readonly baseUrl: string;
  readonly #apiToken: string;
  readonly #userAgent: string;
  readonly #fetch: Fetch;
  /** @internal */
  readonly reconnectDelayMs: number;
  /** @internal */
  readonly watchIdleTimeoutMs: number;
  /** @internal */
  readonly logger: Logger;

  /** new Client("http://127.0.0.1:8080") talks to that gateway. It throws InvalidConfigError for a URL that is not absolute http(s). */
  constructor(baseUrl: string, options: ClientOptions = {}) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new InvalidConfigError(`elector: gateway ${JSON.stringify(baseUrl)} is not an absolute http(s) URL such as http://127.0.0.1:8080`);
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.host === "" || url.search !== "" || url.hash !== "") {
      throw new InvalidConfigError(`elector: gateway ${JSON.stringify(baseUrl)} is not an absolute http(s) URL such as http://127.0.0.1:8080`);
    }
    this.baseUrl = url.href.replace(/\/+$/, "");
    this.#apiToken = options.apiToken ?? "";
    this.#userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    const f = options.fetch;
    this.#fetch = f ? (input, init) => f(input, init) : (input, init) => fetch(input, init);
    this.reconnectDelayMs = options.reconnectDelayMs && options.reconnectDelayMs > 0 ? options.reconnectDelayMs : DEFAULT_RECONNECT_DELAY_MS;
    this.watchIdleTimeoutMs = options.watchIdleTimeoutMs === undefined ? DEFAULT_WATCH_IDLE_TIMEOUT_MS : Math.max(options.watchIdleTimeoutMs, 0);
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * campaign enters candidate req.id in election and returns its status
   * and its token, which heartbeat, resign, reportError and handover need.
   * The election is created by its first campaign.
   *
   * Errors: CandidateExistsError when req.id already campaigns,
   * InvalidRequestError for a bad name, id, TTL or metadata,
   * LimitReachedError, BackendUnavailableError; in a session
   * (req.session) also SessionNotFoundError, SessionInElectionError,
   * SessionTokenMissingError, SessionTokenMismatchError.
   */
  campaign(election: string, req: CampaignRequest, options?: CallOptions): Promise<CampaignResult> {
    const body: Record<string, unknown> = { id: req.id };
    if (req.ttl !== undefined) body.ttl = typeof req.ttl === "number" ? durationString(req.ttl) : req.ttl;
    if (req.priority) body.priority = req.priority;
    if (req.metadata !== undefined) body.metadata = req.metadata;
    if (req.webhook !== undefined) body.webhook = req.webhook;
    const spec: RequestSpec = { ...options, body };
    if (req.session !== undefined) {
      body.session = req.session.id;
      spec.headers = sessionHeaders(req.session.token);
    }
    return this.#json("POST", ["v1", "elections", election, "candidates"], spec);
  }

  /**
   * openSession opens a session: one liveness for many candidacies, as
   * etcd's concurrency.Session is one lease for many elections. Campaign
   * in each election with its answer as req.session and heartbeat the
   * session alone; every candidacy of the session ends with it. ttl is a
   * duration string or milliseconds (the gateway's default when left
   * out). The answer's token is needed by the session's calls and its
   * campaigns, and is the token of each of its candidacies too.
   *
   * Errors: InvalidRequestError (a ttl outside the gateway's bounds),
   * LimitReachedError, BackendUnavailableError.
   */
  openSession(ttl?: string | number, options?: CallOptions): Promise<OpenedSession> {
    const body = ttl === undefined ? undefined : { ttl: typeof ttl === "number" ? durationString(ttl) : ttl };
    return this.#json("POST", ["v1", "sessions"], { ...options, body });
  }

  /**
   * heartbeatSession renews session id and every candidacy in it by the
   * session's TTL, and lists them, each with its own state, term and
   * expires_at. Heartbeat every TTL/3. A leader in the session obeys the
   * step-down rule on each answer (sessionStepDownDeadline, with the term
   * it leads with), and stops acting as soon as an answer no longer shows
   * its candidacy leading with that term.
   *
   * Errors: SessionNotFoundError when the session was closed or expired,
   * its candidacies with it (open another and campaign again),
   * SessionTokenMismatchError, SessionTokenMissingError,
   * BackendUnavailableError.
   */
  heartbeatSession(id: string, token: string, options?: CallOptions): Promise<Session> {
    return this.#json("PUT", ["v1", "sessions", id, "heartbeat"], { ...options, headers: sessionHeaders(token) });
  }

  /**
   * closeSession ends session id: each of its candidacies resigns, a
   * leader handing over at once. Errors: as heartbeatSession.
   */
  async closeSession(id: string, token: string, options?: CallOptions): Promise<void> {
    await this.#json("DELETE", ["v1", "sessions", id], { ...options, headers: sessionHeaders(token) });
  }

  /**
   * heartbeat keeps candidate id alive for another TTL and returns its
   * status: whether it leads, its term and the current leader.
   *
   * Errors: CandidateNotFoundError when the candidacy resigned or expired
   * (campaign again), TokenMismatchError, TransferPendingError (a leader
   * asked to hand over: stop acting as leader, then call handover),
   * BackendUnavailableError.
   */
  heartbeat(election: string, id: string, token: string, options?: CallOptions): Promise<CandidateStatus> {
    return this.#json("PUT", ["v1", "elections", election, "candidates", id, "heartbeat"], { ...options, token });
  }

  /**
   * resign withdraws candidate id; a leader resigning hands over to the
   * next in line at once.
   *
   * Errors: CandidateNotFoundError, TokenMismatchError, BackendUnavailableError.
   */
  async resign(election: string, id: string, token: string, options?: CallOptions): Promise<void> {
    await this.#json("DELETE", ["v1", "elections", election, "candidates", id], { ...options, token });
  }

  /**
   * reportError tells the gateway that candidate id cannot lead (its work
   * failed to start, say): a leader gives up leadership at once, and the
   * candidate rejoins the back of the line after the election's error
   * cooldown if it keeps heartbeating. reason (at most 1 KiB) is shown in
   * the leader.error event; it must not carry secrets.
   */
  reportError(election: string, id: string, token: string, reason = "", options?: CallOptions): Promise<CandidateStatus> {
    const body = reason === "" ? undefined : { reason };
    return this.#json("POST", ["v1", "elections", election, "candidates", id, "error"], { ...options, token, body });
  }

  /** candidate returns candidate id's status, as a heartbeat would, without extending its TTL. */
  candidate(election: string, id: string, options?: ReadOptions): Promise<CandidateStatus> {
    return this.#json("GET", ["v1", "elections", election, "candidates", id], readSpec(options));
  }

  /**
   * transfer asks the leader of election to hand over to follower to. With
   * no leaderToken the caller acts as an operator (its API token needs the
   * admin scope); otherwise leaderToken is the leader's own candidate
   * token. The answer is the election with its pending transfer.
   *
   * With several holders, options.from names the holder that hands over
   * (an operator must name one while more than one holds).
   *
   * Errors: NoLeaderError, NotFollowerError, NotLeaderError,
   * TransferPendingError (to another target), TransferBlockedError,
   * NotSupportedError, ElectionNotFoundError, ForbiddenError,
   * InvalidRequestError (several hold and from is left out).
   */
  transfer(election: string, to: string, leaderToken = "", options?: TransferOptions): Promise<Election> {
    const { from, ...call } = options ?? {};
    const body = from ? { to, from } : { to };
    return this.#json("POST", ["v1", "elections", election, "transfer"], { ...call, token: leaderToken, body });
  }

  /**
   * cancelTransfer cancels the pending transfer of election while its
   * leader still leads: the leader goes on leading in the same term and
   * its heartbeats count again. With no leaderToken the caller acts as an
   * operator (its API token needs the admin scope); otherwise leaderToken
   * is the leader's own candidate token. The answer is the election, with
   * no transfer.
   *
   * Errors: NoTransferPendingError (none pending, or the leadership it
   * asked to hand over has ended), NotLeaderError, PreemptOnError,
   * NotSupportedError, ElectionNotFoundError, ForbiddenError.
   */
  cancelTransfer(election: string, leaderToken = "", options?: CallOptions): Promise<Election> {
    return this.#json("DELETE", ["v1", "elections", election, "transfer"], { ...options, token: leaderToken });
  }

  /**
   * handover ends the leadership of candidate id in favour of the pending
   * transfer's target, which leads at once with the next term; id stays in
   * line as a follower. Call it only once the candidate has stopped acting
   * as leader.
   *
   * Errors: NoTransferPendingError, NotLeaderError, CandidateNotFoundError,
   * TokenMismatchError, NotSupportedError.
   */
  handover(election: string, id: string, token: string, options?: CallOptions): Promise<CandidateStatus> {
    return this.#json("POST", ["v1", "elections", election, "candidates", id, "handover"], { ...options, token });
  }

  /**
   * leader returns the current leader of election and its term.
   *
   * Errors: NoLeaderError (extensions.handover_until while a handover
   * delay holds the promotion back), ElectionNotFoundError.
   */
  leader(election: string, options?: ReadOptions): Promise<LeaderDocument> {
    return this.#json("GET", ["v1", "elections", election, "leader"], readSpec(options));
  }

  /** candidates returns the line of election, leader first. Errors: ElectionNotFoundError. */
  candidates(election: string, options?: ReadOptions): Promise<Candidates> {
    return this.#json("GET", ["v1", "elections", election, "candidates"], readSpec(options));
  }

  /** elections returns every election, sorted by name. */
  elections(options?: ReadOptions): Promise<Elections> {
    return this.#json("GET", ["v1", "elections"], readSpec(options));
  }

  /** election returns election's settings, term and leader. Errors: ElectionNotFoundError. */
  election(election: string, options?: ReadOptions): Promise<Election> {
    return this.#json("GET", ["v1", "elections", election], readSpec(options));
  }

  /**
   * configure applies a merge patch to election's settings, creating the
   * election if it does not exist (the API token needs the admin scope).
   *
   * Errors: InvalidRequestError, NotSupportedError (preempt on a backend
   * without transfers), ForbiddenError.
   */
  configure(election: string, patch: SettingsPatch, options?: CallOptions): Promise<Election> {
    return this.#json("PATCH", ["v1", "elections", election], { ...options, body: patch, contentType: "application/merge-patch+json" });
  }

  /**
   * deleteElection deletes election once nobody campaigns in it (admin
   * scope). Errors: ElectionNotFoundError, ElectionNotEmptyError.
   */
  async deleteElection(election: string, options?: CallOptions): Promise<void> {
    await this.#json("DELETE", ["v1", "elections", election], { ...options });
  }

  /**
   * createSubscription subscribes a URL to election's events (admin
   * scope). The answer carries the signing secret, shown only here.
   *
   * Errors: WebhookDestinationRefusedError, InvalidRequestError,
   * WebhooksUnavailableError.
   */
  createSubscription(election: string, req: SubscriptionRequest, options?: CallOptions): Promise<SubscriptionWithSecret> {
    return this.#json("POST", ["v1", "elections", election, "subscriptions"], { ...options, body: req });
  }

  /** subscriptions lists election's subscriptions, oldest first, without secrets. */
  subscriptions(election: string, options?: CallOptions): Promise<Subscriptions> {
    return this.#json("GET", ["v1", "elections", election, "subscriptions"], { ...options });
  }

  /** subscription returns one subscription. Errors: WebhookNotFoundError. */
  subscription(election: string, sub: string, options?: CallOptions): Promise<Subscription> {
    return this.#json("GET", ["v1", "elections", election, "subscriptions", sub], { ...options });
  }

  /** deleteSubscription removes a subscription and its delivery log. Errors: WebhookNotFoundError. */
  async deleteSubscription(election: string, sub: string, options?: CallOptions): Promise<void> {
    await this.#json("DELETE", ["v1", "elections", election, "subscriptions", sub], { ...options });
  }

  /** rotateSubscriptionSecret issues a new secret; the previous one keeps signing beside it for an overlap period. */
  rotateSubscriptionSecret(election: string, sub: string, options?: CallOptions): Promise<SubscriptionWithSecret> {
    return this.#json("POST", ["v1", "elections", election, "subscriptions", sub, "rotate-secret"], { ...options });
  }

  /** subscriptionDeliveries returns a subscription's delivery log, newest first (at most limit, 1 to 500). */
  subscriptionDeliveries(election: string, sub: string, options?: CallOptions & { limit?: number }): Promise<Deliveries> {
    return this.#json("GET", ["v1", "elections", election, "subscriptions", sub, "deliveries"], { ...options, query: { limit: options?.limit } });
  }

  /** subscriptionDelivery returns one delivery and its attempts. Errors: DeliveryNotFoundError. */
  subscriptionDelivery(election: string, sub: string, delivery: string, options?: CallOptions): Promise<Delivery> {
    return this.#json("GET", ["v1", "elections", election, "subscriptions", sub, "deliveries", delivery], { ...options });
  }

  /** redeliverSubscriptionDelivery sends a delivery again, now, and returns it with the new attempt. Errors: NotRedeliverableError. */
  redeliverSubscriptionDelivery(election: string, sub: string, delivery: string, options?: CallOptions): Promise<Delivery> {
    return this.#json("POST", ["v1", "elections", election, "subscriptions", sub, "deliveries", delivery, "redeliver"], { ...options });
  }

  /** candidateDeliveries returns the delivery log of candidate id's own webhook; its token is required. */
  candidateDeliveries(election: string, id: string, token: string, options?: CallOptions & { limit?: number }): Promise<Deliveries> {
    return this.#json("GET", ["v1", "elections", election, "candidates", id, "deliveries"], { ...options, token, query: { limit: options?.limit } });
  }

  /** redeliverCandidateDelivery sends a delivery of candidate id's own webhook again, now. */
  redeliverCandidateDelivery(election: string, id: string, token: string, delivery: string, options?: CallOptions): Promise<Delivery> {
    return this.#json("POST", ["v1", "elections", election, "candidates", id, "deliveries", delivery, "redeliver"], { ...options, token });
  }

  /** health is the liveness probe, /healthz. */
  health(options?: CallOptions): Promise<Health> {
    return this.#json("GET", ["healthz"], { ...options });
  }

  /** ready is the readiness probe, /readyz: a BackendUnavailableError while the backend cannot serve. */
  ready(options?: CallOptions): Promise<Health> {
    return this.#json("GET", ["readyz"], { ...options });
  }

  /**
   * watch follows the events of election (of every election when election
   * is ""), after options.lastEventId, or, without one, from a reset
   * snapshot of the election followed by its new events.
   *
   * The first connection is made before the promise resolves: its error (a
   * ProblemError such as InvalidRequestError, or a TransportError) rejects
   * it. After that, a dropped connection is reopened after the stream's
   * retry hint (reconnectDelayMs until the stream sends one, doubling up to
   * MAX_RECONNECT_DELAY_MS while attempts fail), resuming from the last id
   * received, so that every event arrives once. Iteration ends when
   * options.signal aborts (or the loop breaks); a 4xx answer to a
   * reconnection ends it with that error.
   */
  async watch(election: string, options: WatchOptions = {}): Promise<EventStream> {
    const stream = new EventStream(this, election, options);
    await stream.open();
    return stream;
  }

  /**
   * observe follows who leads election, as etcd's Election.Observe does,
   * but also saying when nobody does: first the current leader, then every
   * change, an id of "" meaning "no leader" (its term is then the last
   * leadership's). Between two leaders there is always a "no leader". It
   * opens and resumes as watch does.
   */
  async observe(election: string, options: { signal?: AbortSignal } = {}): Promise<AsyncIterable<ObservedLeader>> {
    const events = await this.watch(election, { signal: options.signal });
    return observeLeaders(election, events);
  }

  /**
   * stream opens an event stream: a 200 answer whose body is the stream,
   * or a rejection as for any call.
   *
   * @internal
   */
  async stream(election: string, lastEventId: string, signal: AbortSignal | undefined): Promise<Response> {
    const segments = election === "" ? ["v1", "events"] : ["v1", "elections", election, "events"];
    const headers: Record<string, string> = { Accept: "text/event-stream", "Cache-Control": "no-cache" };
    if (lastEventId !== "") headers["Last-Event-ID"] = lastEventId;
    // The stream's body is read after this returns: the request is bound
    // to signal itself, not to a scope that ends here.
    const res = await this.#send("GET", segments, { signal, headers }, signal);
    if (res.status !== 200) throw await readProblem(res);
    return res;
  }

  /** #json sends a request and decodes a 2xx JSON answer (undefined for 204). */
  async #json<T>(method: string, segments: string[], spec: RequestSpec): Promise<T> {
    const scope = new Scope(spec.signal, spec.timeoutMs);
    try {
      const res = await this.#send(method, segments, spec, scope.signal, scope);
      if (res.status < 200 || res.status > 299) throw await readProblem(res);
      let text: string;
      try {
        text = await res.text();
      } catch (err) {
        throw this.#failure(err, scope, spec, method, segments);
      }
      if (res.status === 204 || text === "") return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch (err) {
        throw new Error(`elector: decode answer of ${method} /${segments.join("/")}: ${(err as Error).message}`);
      }
    } finally {
      scope.dispose();
    }
  }

  /** #send makes one request bound to signal; a failure to get an answer rejects as #failure says. */
  async #send(method: string, segments: string[], spec: RequestSpec, signal: AbortSignal | undefined, scope?: Scope): Promise<Response> {
    let url = this.baseUrl + "/" + segments.map(segment).join("/");
    const query = Object.entries(spec.query ?? {}).filter(([, v]) => v !== undefined);
    if (query.length > 0) url += "?" + query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join("&");
    const headers: Record<string, string> = { Accept: "application/json, application/problem+json", ...spec.headers };
    if (this.#userAgent !== "") headers["User-Agent"] = this.#userAgent;
    if (this.#apiToken !== "") headers.Authorization = `Bearer ${this.#apiToken}`;
    if (spec.token) headers[TOKEN_HEADER] = spec.token;
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers["Content-Type"] = spec.contentType ?? "application/json";
    }
    try {
      return await this.#fetch(url, { method, headers, body, signal });
    } catch (err) {
      throw this.#failure(err, scope, spec, method, segments);
    }
  }

  /** #failure is the error of a request that got no (whole) answer. */
  #failure(err: unknown, scope: Scope | undefined, spec: RequestSpec, method: string, segments: string[]): unknown {
    const what = `${method} ${this.baseUrl}/${segments.join("/")}`;
    if (scope?.timedOut) return new TimeoutError(`elector: ${what}: no answer within ${spec.timeoutMs}ms`);
    if (spec.signal?.aborted) return spec.signal.reason;
    const msg = err instanceof Error ? err.message : String(err);
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return new TransportError(`elector: ${what}: ${msg}${cause}`, { cause: err });
  }
}
