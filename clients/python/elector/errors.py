"""Errors of the elector client.

Every error the package raises derives from :class:`ElectorError`. An answer
of the gateway that is an RFC 9457 problem document becomes a
:class:`ProblemError`, or the subclass of its problem type
(``urn:elector:problem:candidate-not-found`` → :class:`CandidateNotFoundError`),
so callers catch what they can act on::

    try:
        client.heartbeat("billing", "node-a", token)
    except CandidateNotFoundError:
        ...  # the candidacy expired: campaign again

A request that got no answer raises :class:`TransportError`.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import json
import time
from typing import Any, Dict, Mapping, Optional, Type

from .types import parse_time

PROBLEM_TYPE_PREFIX = "urn:elector:problem:"


class ElectorError(Exception):
    """Base of every error this package raises."""


class InvalidConfigError(ElectorError, ValueError):
    """A Candidacy or Client was given a configuration that cannot work."""


class TransportError(ElectorError):
    """No answer came from the gateway: it could not be reached, the
    connection broke, or the request's deadline passed (``timed_out``)."""

    def __init__(self, message: str, *, gateway: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.gateway = gateway
        self.timed_out = timed_out


class ProblemError(ElectorError):
    """A problem document the gateway answered with (or, for an answer that
    was not one, such as a proxy's error page, a problem with an empty
    ``type`` made from the status).

    ``retry_after`` is the wait in seconds the ``Retry-After`` header asked
    for (429 and 503 answers carry one), else 0. ``extensions`` holds the
    extension members, such as ``field``, ``limit`` or ``transfer``.
    """

    def __init__(
        self,
        status: int,
        type: str = "",
        title: str = "",
        detail: str = "",
        instance: str = "",
        extensions: Optional[Dict[str, Any]] = None,
        retry_after: float = 0.0,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.instance = instance
        self.extensions: Dict[str, Any] = dict(extensions or {})
        self.retry_after = retry_after
        super().__init__(str(self))

    @property
    def slug(self) -> str:
        """The part of ``type`` after ``urn:elector:problem:``, or ``""``."""
        if self.type.startswith(PROBLEM_TYPE_PREFIX):
            return self.type[len(PROBLEM_TYPE_PREFIX):]
        return ""

    def __str__(self) -> str:
        title = self.title or "HTTP %d" % self.status
        if self.detail:
            return "elector: %s (%d): %s" % (title, self.status, self.detail)
        return "elector: %s (%d)" % (title, self.status)

    def __repr__(self) -> str:
        return "%s(status=%d, type=%r, detail=%r)" % (type(self).__name__, self.status, self.type, self.detail)


class InvalidRequestError(ProblemError):
    """invalid-request: an input is invalid; ``extensions["field"]`` names it."""


class MalformedJSONError(InvalidRequestError):
    """malformed-json: the body is not one JSON object."""


class MalformedBodyError(InvalidRequestError):
    """malformed-body: the body could not be read."""


class BodyTooLargeError(InvalidRequestError):
    """body-too-large: the body is over the gateway's limit."""


class UnsupportedMediaTypeError(InvalidRequestError):
    """unsupported-media-type: the body is not JSON."""


class RequestTimeoutError(ProblemError):
    """request-timeout: the body did not arrive in time."""


class CandidateTokenMissingError(ProblemError):
    """candidate-token-missing: no Elector-Candidate-Token header."""


class TokenMismatchError(ProblemError):
    """candidate-token-mismatch: the token is not this candidate's."""


class SessionTokenMissingError(ProblemError):
    """session-token-missing: no Elector-Session-Token header, on a
    session's call or a campaign in a session."""


class SessionTokenMismatchError(ProblemError):
    """session-token-mismatch: the token is not this session's."""


class SessionNotFoundError(ProblemError):
    """session-not-found: the session is unknown, closed, or expired (its
    heartbeats stopped for its TTL), and its candidacies with it: open
    another and campaign again."""


class SessionInElectionError(ProblemError):
    """session-in-election: the session already has a candidacy in the
    election; a session campaigns once per election."""


class ElectionNotFoundError(ProblemError):
    """election-not-found: no such election."""


class CandidateNotFoundError(ProblemError):
    """candidate-not-found: the candidacy resigned or expired; campaign again."""


class CandidacyRevokedError(CandidateNotFoundError):
    """candidate-not-found with a ``revoked`` member: the backend ended the
    candidacy before the TTL of its last acknowledged heartbeat ran out (on
    etcd, a lease revoked early), not because it was late. It is still a
    :class:`CandidateNotFoundError`: campaign again, at the back of the
    line. ``revoked_at`` is when a gateway saw the candidacy end,
    ``expires_at`` when it should have ended (aware datetimes, or None
    when the gateway sent no readable time)."""

    @property
    def revoked_at(self) -> Optional[_dt.datetime]:
        return self._revoked_time("at")

    @property
    def expires_at(self) -> Optional[_dt.datetime]:
        return self._revoked_time("expires_at")

    def _revoked_time(self, key: str) -> Optional[_dt.datetime]:
        r = self.extensions.get("revoked")
        if not isinstance(r, dict):
            return None
        try:
            return parse_time(r.get(key))
        except ValueError:
            return None


class NoLeaderError(ProblemError):
    """no-leader: the election exists but nobody leads (``extensions`` may
    hold ``handover_until``)."""


class NotFoundError(ProblemError):
    """not-found: no such route."""


class MethodNotAllowedError(ProblemError):
    """method-not-allowed."""


class CandidateExistsError(ProblemError):
    """candidate-exists: a live candidate has this id; resign it with its
    token or wait for its TTL."""


class ElectionNotEmptyError(ProblemError):
    """election-not-empty: the election still has candidates."""


class LimitReachedError(ProblemError):
    """limit-reached: a cap was reached (``extensions["limit"]``)."""


class RateLimitedError(ProblemError):
    """rate-limited: slow down, see ``retry_after``."""


class UnauthenticatedError(ProblemError):
    """unauthenticated: no known API token."""


class ForbiddenError(ProblemError):
    """forbidden: the API token lacks the scope or does not cover the election."""


class WebhookDestinationRefusedError(ProblemError):
    """webhook-destination-refused: a webhook URL on a non-public network."""


class WebhookNotFoundError(ProblemError):
    """webhook-not-found: no such subscription."""


class DeliveryNotFoundError(ProblemError):
    """delivery-not-found: no such delivery in the log."""


class NotRedeliverableError(ProblemError):
    """not-redeliverable: a gap record cannot be redelivered."""


class TransferPendingError(ProblemError):
    """transfer-pending: a leader's heartbeat refused because it is asked to
    hand over (it must stop acting as leader and call handover), or a
    second transfer asked for. ``transfer`` is the pending transfer."""

    @property
    def transfer(self) -> Optional[Dict[str, Any]]:
        t = self.extensions.get("transfer")
        return t if isinstance(t, dict) else None


class NotFollowerError(ProblemError):
    """not-a-follower: the target of a transfer is not a follower."""


class NotLeaderError(ProblemError):
    """not-leader: the candidate (or candidate token) is not the leader's."""


class NoTransferPendingError(ProblemError):
    """no-transfer-pending: a handover with no transfer pending."""


class PreemptOnError(ProblemError):
    """preempt-on: the pending transfer was started by the election's
    preempt setting, which would start it again; turn preempt off first."""


class TransferBlockedError(ProblemError):
    """transfer-blocked: the backend cannot reorder the line for that transfer."""


class WebhooksUnavailableError(ProblemError):
    """webhooks-unavailable: this gateway runs without webhook delivery."""


class NotSupportedError(ProblemError):
    """not-supported: the gateway's backend cannot do this."""


class InternalError(ProblemError):
    """internal: an unexpected error of the gateway."""


class UnavailableError(ProblemError):
    """backend-unavailable, election-contended (other writes to the election
    kept getting there first; nothing was written), or a 5xx answer that is
    not a problem document: retry (see ``retry_after``)."""


class ClientClosedRequestError(ProblemError):
    """client-closed-request: only ever logged by the gateway."""


PROBLEM_CLASSES: Mapping[str, Type[ProblemError]] = {
    "invalid-request": InvalidRequestError,
    "malformed-json": MalformedJSONError,
    "malformed-body": MalformedBodyError,
    "request-timeout": RequestTimeoutError,
    "client-closed-request": ClientClosedRequestError,
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
    "body-too-large": BodyTooLargeError,
    "unsupported-media-type": UnsupportedMediaTypeError,
    "limit-reached": LimitReachedError,
    "rate-limited": RateLimitedError,
    "unauthenticated": UnauthenticatedError,
    "forbidden": ForbiddenError,
    "webhook-destination-refused": WebhookDestinationRefusedError,
    "webhook-not-found": WebhookNotFoundError,
    "delivery-not-found": DeliveryNotFoundError,
    "not-redeliverable": NotRedeliverableError,
    "transfer-pending": TransferPendingError,
    "not-a-follower": NotFollowerError,
    "not-leader": NotLeaderError,
    "no-transfer-pending": NoTransferPendingError,
    "preempt-on": PreemptOnError,
    "transfer-blocked": TransferBlockedError,
    "webhooks-unavailable": WebhooksUnavailableError,
    "not-supported": NotSupportedError,
    "internal": InternalError,
    "backend-unavailable": UnavailableError,
    "election-contended": UnavailableError,
}
"""Problem slug → the exception class raised for it."""

_STANDARD_MEMBERS = ("type", "title", "status", "detail", "instance")


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> float:
    """Reads a Retry-After header, delay-seconds or an HTTP-date (RFC 9110,
    section 10.2.3), as seconds from ``now`` (Unix time); 0 when absent,
    malformed or past."""
    if not value:
        return 0.0
    value = value.strip()
    if value.isdigit() and value.isascii():
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return 0.0
    if when is None or when.tzinfo is None:
        return 0.0
    wait = when.timestamp() - (time.time() if now is None else now)
    return wait if wait > 0 else 0.0


def problem_from_response(status: int, content_type: str, body: bytes, retry_after: Optional[str]) -> ProblemError:
    """Turns a non-2xx answer into the ProblemError of its type."""
    wait = parse_retry_after(retry_after)
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct in ("application/problem+json", "application/json"):
        try:
            doc = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            doc = None
        if isinstance(doc, dict):
            ptype = doc.get("type") if isinstance(doc.get("type"), str) else ""
            pstatus = doc.get("status") if isinstance(doc.get("status"), int) else status
            ext = {k: v for k, v in doc.items() if k not in _STANDARD_MEMBERS}
            slug = ptype[len(PROBLEM_TYPE_PREFIX):] if ptype.startswith(PROBLEM_TYPE_PREFIX) else ""
            cls = PROBLEM_CLASSES.get(slug)
            if cls is CandidateNotFoundError and isinstance(ext.get("revoked"), dict):
                cls = CandidacyRevokedError
            if cls is None:
                cls = UnavailableError if not ptype and pstatus >= 500 else ProblemError
            return cls(
                pstatus or status,
                type=ptype,
                title=_str(doc.get("title")),
                detail=_str(doc.get("detail")),
                instance=_str(doc.get("instance")),
                extensions=ext,
                retry_after=wait,
            )
    detail = body.decode("utf-8", "replace").strip()
    if len(detail) > 200:
        detail = detail[:200] + "…"
    cls = UnavailableError if status >= 500 else ProblemError
    return cls(status, title=_status_text(status), detail=detail, retry_after=wait)


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _status_text(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP %d" % status


class LeadershipLost(ElectorError):
    """Raised by :meth:`Leadership.check` once the leadership has ended;
    ``reason`` says why (one of the ``REASON_*`` constants)."""

    def __init__(self, term: int, reason: str) -> None:
        super().__init__("elector: leadership of term %d lost: %s" % (term, reason))
        self.term = term
        self.reason = reason


class NotRunningError(ElectorError):
    """The Candidacy is not running (not started, or closed)."""


__all__ = sorted(
    [n for n, v in dict(globals()).items() if isinstance(v, type) and issubclass(v, ElectorError)]
    + ["PROBLEM_TYPE_PREFIX", "PROBLEM_CLASSES", "parse_retry_after", "problem_from_response"]
)
