// Problem documents become typed errors.

import assert from "node:assert/strict";
import { test } from "node:test";
import * as elector from "../dist/index.js";

const { readProblem, ProblemError, InvalidRequestError } = elector;

function problem(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/problem+json", ...headers } });
}

test("every stable problem type has its class", async () => {
  // The slugs of api/problem.go's catalogue (client-closed-request is never sent).
  const cases: [string, number, string][] = [
    ["invalid-request", 400, "InvalidRequestError"],
    ["malformed-json", 400, "MalformedJsonError"],
    ["malformed-body", 400, "MalformedBodyError"],
    ["request-timeout", 408, "RequestTimeoutError"],
    ["candidate-token-missing", 400, "CandidateTokenMissingError"],
    ["candidate-token-mismatch", 403, "TokenMismatchError"],
    ["session-token-missing", 400, "SessionTokenMissingError"],
    ["session-token-mismatch", 403, "SessionTokenMismatchError"],
    ["session-not-found", 404, "SessionNotFoundError"],
    ["session-in-election", 409, "SessionInElectionError"],
    ["election-not-found", 404, "ElectionNotFoundError"],
    ["candidate-not-found", 404, "CandidateNotFoundError"],
    ["no-leader", 404, "NoLeaderError"],
    ["not-found", 404, "NotFoundError"],
    ["method-not-allowed", 405, "MethodNotAllowedError"],
    ["candidate-exists", 409, "CandidateExistsError"],
    ["election-not-empty", 409, "ElectionNotEmptyError"],
    ["body-too-large", 413, "BodyTooLargeError"],
    ["unsupported-media-type", 415, "UnsupportedMediaTypeError"],
    ["limit-reached", 429, "LimitReachedError"],
    ["rate-limited", 429, "RateLimitedError"],
    ["unauthenticated", 401, "UnauthenticatedError"],
    ["forbidden", 403, "ForbiddenError"],
    ["webhook-destination-refused", 422, "WebhookDestinationRefusedError"],
    ["webhook-not-found", 404, "WebhookNotFoundError"],
    ["delivery-not-found", 404, "DeliveryNotFoundError"],
    ["not-redeliverable", 409, "NotRedeliverableError"],
    ["transfer-pending", 409, "TransferPendingError"],
    ["not-a-follower", 409, "NotFollowerError"],
    ["not-leader", 409, "NotLeaderError"],
    ["no-transfer-pending", 409, "NoTransferPendingError"],
    ["transfer-blocked", 409, "TransferBlockedError"],
    ["preempt-on", 409, "PreemptOnError"],
    ["webhooks-unavailable", 501, "WebhooksUnavailableError"],
    ["not-supported", 501, "NotSupportedError"],
    ["internal", 500, "InternalError"],
    ["backend-unavailable", 503, "BackendUnavailableError"],
    ["election-contended", 503, "BackendUnavailableError"],
  ];
  for (const [slug, status, cls] of cases) {
    const err = await readProblem(problem(status, { type: `urn:elector:problem:${slug}`, title: "T", status, detail: "d" }));
    const want = (elector as unknown as Record<string, new (...a: never[]) => unknown>)[cls];
    assert.ok(want, `${cls} is exported`);
    assert.ok(err instanceof want, `${slug}: ${err.name}, want ${cls}`);
    assert.equal(err.name, cls);
    assert.equal(err.slug, slug);
    assert.equal(err.status, status);
  }
});

test("the invalid-request family matches InvalidRequestError", async () => {
  for (const slug of ["malformed-json", "body-too-large", "unsupported-media-type", "malformed-body"]) {
    const err = await readProblem(problem(400, { type: `urn:elector:problem:${slug}`, status: 400 }));
    assert.ok(err instanceof InvalidRequestError, slug);
  }
});

test("a problem keeps its members, extensions and Retry-After", async () => {
  const err = await readProblem(
    problem(
      429,
      { type: "urn:elector:problem:rate-limited", title: "Rate limited", status: 429, detail: "slow down", instance: "/v1/x", limit: "writes_per_second" },
      { "retry-after": "2" },
    ),
  );
  assert.ok(err instanceof elector.RateLimitedError);
  assert.equal(err.title, "Rate limited");
  assert.equal(err.detail, "slow down");
  assert.equal(err.instance, "/v1/x");
  assert.deepEqual(err.extensions, { limit: "writes_per_second" });
  assert.equal(err.retryAfterMs, 2000);
  assert.equal(err.message, "elector: Rate limited (429): slow down");
});

test("an answer that is not a problem document is a ProblemError with an empty type", async () => {
  const res = new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway", headers: { "content-type": "text/html" } });
  const err = await readProblem(res);
  assert.equal(err.constructor, ProblemError);
  assert.equal(err.type, "");
  assert.equal(err.status, 502);
  assert.equal(err.detail, "<html>bad gateway</html>");
  const unknown = await readProblem(problem(409, { type: "urn:elector:problem:from-a-newer-gateway", status: 409 }));
  assert.equal(unknown.constructor, ProblemError);
  assert.equal(unknown.slug, "from-a-newer-gateway");
});

test("a revoked candidacy is still candidate-not-found and says when", async () => {
  const err = await readProblem(
    problem(404, {
      type: "urn:elector:problem:candidate-not-found",
      status: 404,
      detail: "the backend ended its candidacy",
      revoked: { at: "2026-11-22T10:00:01.5Z", expires_at: "2026-11-22T10:00:05.5Z" },
    }),
  );
  assert.ok(err instanceof elector.CandidacyRevokedError, err.name);
  assert.ok(err instanceof elector.CandidateNotFoundError);
  assert.equal(err.name, "CandidacyRevokedError");
  assert.equal(err.slug, "candidate-not-found");
  assert.equal(err.revokedAt?.toISOString(), "2026-11-22T10:00:01.500Z");
  assert.equal(err.expiresAt?.toISOString(), "2026-11-22T10:00:05.500Z");
});

test("candidate-not-found without a revoked object is plain", async () => {
  for (const revoked of [undefined, null, "2026-11-22T10:00:01Z", ["at"]]) {
    const body: Record<string, unknown> = { type: "urn:elector:problem:candidate-not-found", status: 404 };
    if (revoked !== undefined) body.revoked = revoked;
    const err = await readProblem(problem(404, body));
    assert.equal(err.name, "CandidateNotFoundError", JSON.stringify(revoked));
    assert.ok(!(err instanceof elector.CandidacyRevokedError));
  }
  const odd = await readProblem(problem(404, { type: "urn:elector:problem:candidate-not-found", status: 404, revoked: { at: "yesterday" } }));
  assert.ok(odd instanceof elector.CandidacyRevokedError);
  assert.equal(odd.revokedAt, undefined);
  assert.equal(odd.expiresAt, undefined);
});
