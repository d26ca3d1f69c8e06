// @electorhq/elector: the TypeScript/JavaScript client of elector, a
// leader-election gateway. See README.md.

export { Candidacy } from "./candidacy.js";
export {
  DEFAULT_CANDIDATE_TTL_MS,
  DEFAULT_ERROR_TIMEOUT_MS,
  MAX_RETRY_DELAY_MS,
  stepDownMargin,
  type CandidacyOptions,
  type Standing,
} from "./candidacy-config.js";
export { Leadership, LeadershipLostError, type Reason } from "./leadership.js";
export {
  Client,
  DEFAULT_RECONNECT_DELAY_MS,
  DEFAULT_USER_AGENT,
  MAX_RECONNECT_DELAY_MS,
  SESSION_TOKEN_HEADER,
  TOKEN_HEADER,
  durationString,
  silentLogger,
  type CallOptions,
  type ClientOptions,
  type Fetch,
  type Logger,
  type TransferOptions,
} from "./client.js";
export { sessionStepDownDeadline } from "./session.js";
export { keepSession, SessionKeeper, SessionLead, type SessionAnswer, type SessionCampaign, type SessionKeeperOptions } from "./session-keeper.js";
export { EventStream, type WatchOptions } from "./watch.js";
export { SSEParser, type SSEFrame } from "./sse.js";
export { retryDelay } from "./backoff.js";
export * from "./errors.js";
export * from "./webhooks.js";
export type * from "./types.js";
