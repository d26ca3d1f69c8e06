// The API's documents, in the API's own field names (openapi.yaml is the
// authority). Times are RFC 3339 strings, durations Go duration strings
// ("10s", "1m30s", "500ms"), terms numbers (fencing tokens; exact up to
// 2^53).

/** A candidate's metadata: a small JSON object. */
export type Metadata = Record<string, unknown>;

/** Where a candidate stands in its election. */
export type State = "follower" | "leader" | "error";

/** The current leader of an election and its fencing term; with several holders, one holder and its holdership's term. */
export interface Leader {
  id: string;
  term: number;
  metadata: Metadata;
  since: string;
  expires_at: string;
}

/** GET /v1/elections/{election}/leader: with several holders, the longest-standing. */
export interface LeaderDocument extends Leader {
  election: string;
  /** Every holder, the longest-standing first, when the election's holders setting is above 1; left out with one. */
  holders?: Leader[];
}

/** A pending transfer of leadership to a named follower. */
export interface Transfer {
  to: string;
  /** The holder asked to hand over (with one holder, the leader). */
  from?: string;
  reason: "transferred" | "preempted";
  requested_at: string;
}

/** What a candidate learns from campaign, heartbeat, error report and handover. */
export interface CandidateStatus {
  election: string;
  id: string;
  state: State;
  /** Candidates ahead in line; 0 for the leader, -1 in error. */
  position: number;
  /** Its own term, the fencing token, while this candidate leads (holds); otherwise the election's last term. */
  term: number;
  metadata: Metadata;
  ttl: string;
  joined_at: string;
  /** When the candidacy ends unless it heartbeats. */
  expires_at: string;
  cooldown_until?: string;
  /** The current leader (with several holders, the longest-standing), null when nobody leads. */
  leader: Leader | null;
  /** Every holder, when the election's holders setting is above 1; left out with one. */
  holders?: Leader[];
  priority?: number;
  /** The election's pending transfer, if any. */
  transfer?: Transfer;
}

/** The answer of a campaign: the status and the candidate token. */
export interface CampaignResult extends CandidateStatus {
  /** The candidate token: heartbeat, resign, reportError and handover need it. Keep it secret. */
  token: string;
  /** Signs the candidate's own webhook; only when the campaign gave one. */
  webhook_secret?: string;
}

/** The candidate's own webhook: its leader.begin, leader.end and leader.error. */
export interface CandidateWebhook {
  url: string;
  /** How long the leader.begin may take to be acknowledged (a duration string). */
  begin_timeout?: string;
}

/** The body of a campaign. */
export interface CampaignRequest {
  id: string;
  /** How long the candidacy lives without a heartbeat: a duration string, or milliseconds. The gateway's default when left out. */
  ttl?: string | number;
  metadata?: Metadata;
  /** Orders the line, higher first (-1000 to 1000); 0 by default. */
  priority?: number;
  webhook?: CandidateWebhook;
  /**
   * Campaign in this session (see Client.openSession; its answer fits):
   * the candidacy lives as long as the session, with its TTL (leave ttl
   * out), and its token is the session's. The id goes in the body, the
   * token in Elector-Session-Token.
   */
  session?: SessionRef;
}

/** Names a session and carries its token: an OpenedSession, or its id and token. */
export interface SessionRef {
  id: string;
  token: string;
}

/** One candidacy of a session. */
export interface SessionCandidate {
  election: string;
  id: string;
  /**
   * The candidacy's state, as its own heartbeat would answer it. A holder
   * that the gateway deposed (a failed begin webhook, a lowered holders
   * setting) is still renewed by the session's heartbeats, as a follower
   * or in error: it must not act as leader, whatever its expires_at.
   */
  state: State;
  /** Its own term, the fencing token, while it is leader; otherwise the election's term. */
  term: number;
  /**
   * The candidacy's own expiry: the session's, but for a leader asked to
   * hand over (a transfer), which a heartbeat does not renew. A leader
   * must stop acting by then unless renewed again: see
   * sessionStepDownDeadline.
   */
  expires_at: string;
}

/**
 * A session: one liveness shared by many candidacies, as etcd's
 * concurrency.Session is one lease shared by a process's elections.
 */
export interface Session {
  id: string;
  ttl: string;
  /** When the session's candidacies expire unless it heartbeats. */
  expires_at: string;
  /** Its candidacies, by election, as its heartbeat left them; none when it was opened. */
  candidates: SessionCandidate[];
}

/** The answer of openSession: the session and its token. */
export interface OpenedSession extends Session {
  /** The session's token, for its calls, its campaigns and its candidacies' own calls. Keep it secret. */
  token: string;
}

/** One candidate in the line of an election. */
export interface Candidate {
  id: string;
  state: State;
  position: number;
  metadata: Metadata;
  ttl: string;
  priority?: number;
  joined_at: string;
  expires_at: string;
  /** The leader's term; only on the leader. */
  term?: number;
  cooldown_until?: string;
}

/** An election's line of candidates, leader first. */
export interface Candidates {
  election: string;
  term: number;
  candidates: Candidate[];
}

/** An election's knobs. */
export interface Settings {
  error_cooldown: string;
  handover_delay: string;
  preempt?: boolean;
  /** How many candidates hold the election at once (1 to 64). */
  holders?: number;
}

/** A merge patch of an election's settings; null resets a setting to the gateway's default. */
export interface SettingsPatch {
  error_cooldown?: string | null;
  handover_delay?: string | null;
  preempt?: boolean | null;
  /** How many candidates hold at once, 1 to 64; above 1 needs a backend that holds several. */
  holders?: number | null;
}

/** One election, its settings, term and leader. */
export interface Election {
  name: string;
  settings: Settings;
  term: number;
  leader: Leader | null;
  /** Every holder, when the election's holders setting is above 1. */
  holders?: Leader[];
  candidates: number;
  handover_until?: string;
  transfer?: Transfer;
}

/** GET /v1/elections. */
export interface Elections {
  elections: Election[];
}

/** The event types of the stream and the webhooks. */
export type TransitionType =
  | "leader.begin"
  | "leader.end"
  | "leader.error"
  | "candidate.joined"
  | "candidate.left"
  | "leader.transfer"
  | "leader.transfer_cancelled";

/** The data of a transition event. */
export interface EventData {
  election: string;
  term: number;
  candidate?: { id: string; metadata?: Metadata };
  previous?: { id: string; term: number };
  reason?: string;
  detail?: string;
}

/** A transition event: the body of a webhook, the data of an SSE message. */
export interface ElectorEvent {
  type: TransitionType;
  timestamp: string;
  data: EventData;
}

/** The whole state of one election, the data of a reset event. */
export interface Snapshot {
  election: string;
  settings: Settings;
  term: number;
  leader: Leader | null;
  /** Every holder, when the election's holders setting is above 1. */
  holders?: Leader[];
  handover_until?: string;
  transfer?: Transfer;
  candidates: Candidate[];
}

/** A transition event of a watch, with its id. */
export interface TransitionEvent extends ElectorEvent {
  /** The event's id, stable across gateway replicas: resume after it with lastEventId. */
  id: string;
}

/**
 * A reset event of a watch: forget what you knew of the election and apply
 * the events that follow as deltas. It comes first on a fresh stream, and
 * again when the gateway no longer holds the point a resumption asked for.
 */
export interface ResetEvent {
  /** The id to resume from; "" for a snapshot of an election that has no events yet, or one that is not the last of a series. */
  id: string;
  type: "reset";
  timestamp: string;
  snapshot: Snapshot;
}

/** One event of Client.watch. */
export type WatchEvent = TransitionEvent | ResetEvent;

/** A value of Client.observe: who leads; id "" means nobody (term is then the last leadership's). */
export interface ObservedLeader {
  election: string;
  /** The leader's id, or "" for no leader. */
  id: string;
  term: number;
  metadata?: Metadata;
  since?: string;
}

/** The body of a subscription. */
export interface SubscriptionRequest {
  url: string;
  /** The event types to deliver; all when left out or empty. */
  types?: TransitionType[];
  /** A signing secret of your own (whsec_ and the base64 of 24 to 64 bytes); one is generated when left out. */
  secret?: string;
}

/** A webhook subscription. */
export interface Subscription {
  id: string;
  election: string;
  url: string;
  types: string[];
  secrets: { created_at: string; expires_at?: string }[];
  disabled: boolean;
  disabled_reason?: string;
  created_at: string;
}

/** A subscription with its signing secret, shown only when created or rotated. */
export interface SubscriptionWithSecret extends Subscription {
  secret: string;
}

/** GET …/subscriptions. */
export interface Subscriptions {
  subscriptions: Subscription[];
}

/** One attempt of a delivery. */
export interface Attempt {
  at: string;
  status_code?: number;
  latency: string;
  error?: string;
  manual?: boolean;
}

/** One event sent to an endpoint, with its attempts. */
export interface Delivery {
  id: string;
  event_id?: string;
  event_type?: string;
  term: number;
  status: "pending" | "succeeded" | "failed" | "gap";
  error?: string;
  created_at: string;
  updated_at: string;
  next_attempt_at?: string;
  attempts: Attempt[];
  payload?: ElectorEvent;
}

/** A delivery log, newest first. */
export interface Deliveries {
  deliveries: Delivery[];
}

/** /healthz and /readyz. */
export interface Health {
  status: "ok" | "ready";
  checks?: Record<string, string>;
}
