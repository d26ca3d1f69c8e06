"""Webhook verification, with the Standard Webhooks specification's example."""

from __future__ import annotations

import base64
import os

import pytest

from elector import webhooks
from elector.webhooks import (
    InvalidSecretError,
    InvalidTimestampError,
    MissingHeadersError,
    NoMatchingSignatureError,
    TimestampOutOfToleranceError,
)

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
TS = 1614265330
BODY = '{"test": 2432232314}'
SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def headers(msg_id=ID, ts=TS, sig=SIGNATURE):
    h = {}
    if msg_id:
        h["webhook-id"] = msg_id
    if ts:
        h["webhook-timestamp"] = str(ts)
    if sig:
        h["webhook-signature"] = sig
    return h


def new_secret(n=32):
    return "whsec_" + base64.b64encode(os.urandom(n)).decode()


def test_sign_matches_the_specification_example():
    assert webhooks.sign(SECRET, ID, TS, BODY) == SIGNATURE


OTHER = new_secret()


@pytest.mark.parametrize(
    "secrets, h, body, now, want",
    [
        pytest.param(SECRET, headers(), BODY, TS, None, id="spec example"),
        pytest.param(SECRET[len("whsec_"):], headers(), BODY, TS, None, id="secret without prefix"),
        pytest.param([OTHER, SECRET], headers(), BODY, TS, None, id="one of several secrets"),
        pytest.param(SECRET, headers(sig="v1,AAAA " + SIGNATURE), BODY, TS, None, id="one of several signatures"),
        pytest.param(SECRET, headers(sig="v1a,xyz v2,abc " + SIGNATURE), BODY, TS, None, id="unknown versions are skipped"),
        pytest.param(SECRET, headers(), BODY.encode(), TS, None, id="body as bytes"),
        pytest.param(SECRET, {k.upper(): v for k, v in headers().items()}, BODY, TS, None, id="header names in any case"),
        pytest.param(SECRET, headers(), BODY, TS + 299, None, id="4m59s late"),
        pytest.param(SECRET, headers(), BODY, TS + 360, TimestampOutOfToleranceError, id="6 minutes late"),
        pytest.param(SECRET, headers(), BODY, TS - 360, TimestampOutOfToleranceError, id="6 minutes early"),
        pytest.param(SECRET, headers(), '{"test": 2432232315}', TS, NoMatchingSignatureError, id="body changed"),
        pytest.param(SECRET, headers(msg_id=ID + "x"), BODY, TS, NoMatchingSignatureError, id="id changed"),
        pytest.param(SECRET, headers(ts=TS + 1), BODY, TS, NoMatchingSignatureError, id="timestamp changed"),
        pytest.param(OTHER, headers(), BODY, TS, NoMatchingSignatureError, id="wrong secret"),
        pytest.param(SECRET, headers(sig="v1,!!!"), BODY, TS, NoMatchingSignatureError, id="signature not base64"),
        pytest.param(SECRET, headers(msg_id=""), BODY, TS, MissingHeadersError, id="no id"),
        pytest.param(SECRET, headers(ts=0), BODY, TS, MissingHeadersError, id="no timestamp"),
        pytest.param(SECRET, headers(sig=""), BODY, TS, MissingHeadersError, id="no signature"),
        pytest.param(SECRET, dict(headers(), **{"webhook-timestamp": "1614265330.5"}), BODY, TS, InvalidTimestampError, id="timestamp not a number"),
        pytest.param(SECRET, dict(headers(), **{"webhook-timestamp": " 1614265330"}), BODY, TS, InvalidTimestampError, id="timestamp with a space"),
        pytest.param(new_secret(16), headers(), BODY, TS, InvalidSecretError, id="secret too short"),
        pytest.param("whsec_%%%", headers(), BODY, TS, InvalidSecretError, id="secret not base64"),
        pytest.param([], headers(), BODY, TS, InvalidSecretError, id="no secrets"),
    ],
)
def test_verify(secrets, h, body, now, want):
    if want is None:
        assert webhooks.verify(secrets, h, body, now=now) == {"test": 2432232314}
    else:
        with pytest.raises(want):
            webhooks.verify(secrets, h, body, now=now)


def test_sign_with_every_secret_verifies_with_either():
    old, new = new_secret(), new_secret()
    sig = webhooks.sign([new, old], "42", TS, "{}")
    assert len(sig.split()) == 2
    for s in (old, new):
        assert webhooks.verify(s, headers("42", TS, sig), "{}", now=TS) == {}
