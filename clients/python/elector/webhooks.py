"""Verification of the webhooks elector sends, per Standard Webhooks.

A delivery carries ``webhook-id``, ``webhook-timestamp`` (Unix seconds) and
``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "id.timestamp.body">``
keyed with the bytes of the secret (the base64 after ``whsec_``), several
separated by spaces while a secret is rotated. Verify over the raw body,
before parsing it::

    from elector.webhooks import verify, WebhookVerificationError

    try:
        event = verify(os.environ["ELECTOR_WEBHOOK_SECRET"], request.headers, request.body)
    except WebhookVerificationError:
        return 401
    # then de-duplicate on the webhook-id header and drop stale terms

Delivery is at least once: de-duplicate on ``webhook-id``, and ignore a
``leader.begin`` or ``leader.end`` whose ``data.term`` is below the highest
term you have acted on.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from .errors import ElectorError

HEADER_ID = "webhook-id"
HEADER_TIMESTAMP = "webhook-timestamp"
HEADER_SIGNATURE = "webhook-signature"
SECRET_PREFIX = "whsec_"
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64
DEFAULT_TOLERANCE = 300.0
"""How far, in seconds, a webhook-timestamp may be from the receiver's
clock, either way, for verify to accept it."""

_DIGITS = re.compile(r"[0-9]+")


class WebhookVerificationError(ElectorError):
    """A delivery that must be refused (answer 401)."""


class MissingHeadersError(WebhookVerificationError):
    """webhook-id, webhook-timestamp or webhook-signature is missing."""


class InvalidTimestampError(WebhookVerificationError):
    """webhook-timestamp is not Unix seconds."""


class TimestampOutOfToleranceError(WebhookVerificationError):
    """webhook-timestamp is too far from the receiver's clock (a replay?)."""


class InvalidSecretError(WebhookVerificationError):
    """A secret is not whsec_ and the base64 of 24 to 64 bytes."""


class NoMatchingSignatureError(WebhookVerificationError):
    """No signature of webhook-signature is that of a given secret."""


Secrets = Union[str, Iterable[str]]


def _keys(secrets: Secrets) -> List[bytes]:
    if isinstance(secrets, str):
        secrets = [secrets]
    keys = []
    for s in secrets:
        text = s[len(SECRET_PREFIX):] if s.startswith(SECRET_PREFIX) else s
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidSecretError("webhooks: invalid secret: not whsec_ and base64") from None
        if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
            raise InvalidSecretError(
                "webhooks: invalid secret: %d bytes, want %d to %d" % (len(key), MIN_SECRET_BYTES, MAX_SECRET_BYTES)
            )
        keys.append(key)
    if not keys:
        raise InvalidSecretError("webhooks: invalid secret: none given")
    return keys


def _mac(key: bytes, msg_id: str, ts: int, body: bytes) -> bytes:
    return hmac.new(key, b"%s.%d.%s" % (msg_id.encode("utf-8"), ts, body), hashlib.sha256).digest()


def _body(body: Union[bytes, bytearray, str]) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def sign(secrets: Secrets, msg_id: str, timestamp: int, body: Union[bytes, str]) -> str:
    """The webhook-signature value of a message: one ``v1,<base64>`` per
    secret, separated by spaces. For testing receivers. Raises
    InvalidSecretError."""
    b = _body(body)
    return " ".join("v1," + base64.b64encode(_mac(k, msg_id, int(timestamp), b)).decode("ascii") for k in _keys(secrets))


def _header(headers: Mapping[str, str], name: str) -> str:
    get = getattr(headers, "get", None)
    value = get(name) if get is not None else None
    if value is None:
        for k, v in headers.items():
            if k.lower() == name:
                value = v
                break
    return value or ""


def verify(
    secrets: Secrets,
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    now: Optional[float] = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Dict[str, Any]:
    """Checks a received webhook and returns its event, parsed from JSON.

    ``secrets`` is one secret or several (during a rotation, any may
    match); ``headers`` any mapping of the request's headers (names in any
    case); ``body`` the raw body as received. The timestamp must be within
    ``tolerance`` seconds of ``now`` (Unix time, default the clock) either
    way, and one of the v1 signatures must match (compared in constant
    time).

    Raises MissingHeadersError, InvalidTimestampError,
    TimestampOutOfToleranceError, InvalidSecretError or
    NoMatchingSignatureError (all WebhookVerificationError), or ValueError
    when a verified body is not JSON.
    """
    msg_id = _header(headers, HEADER_ID)
    ts_text = _header(headers, HEADER_TIMESTAMP)
    sigs = _header(headers, HEADER_SIGNATURE)
    if not msg_id or not ts_text or not sigs:
        raise MissingHeadersError("webhooks: missing webhook-id, webhook-timestamp or webhook-signature")
    if not _DIGITS.fullmatch(ts_text):
        raise InvalidTimestampError("webhooks: webhook-timestamp is not unix seconds")
    ts = int(ts_text)
    if tolerance <= 0:
        tolerance = DEFAULT_TOLERANCE
    clock = int(time.time() if now is None else now)
    if abs(clock - ts) > int(tolerance):
        raise TimestampOutOfToleranceError("webhooks: webhook-timestamp outside the tolerance")
    keys = _keys(secrets)
    b = _body(body)
    for sig in sigs.split():
        version, sep, value = sig.partition(",")
        if not sep or version != "v1":
            continue
        try:
            got = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue
        for key in keys:
            if hmac.compare_digest(got, _mac(key, msg_id, ts, b)):
                return json.loads(b.decode("utf-8"))
    raise NoMatchingSignatureError("webhooks: no signature matches")
