"""Problem documents become typed exceptions."""

from __future__ import annotations

import datetime
import json
import re

import pytest

import elector
from conftest import REPO
from elector.errors import PROBLEM_CLASSES, PROBLEM_TYPE_PREFIX, problem_from_response


def slugs_in_openapi():
    text = (REPO / "openapi.yaml").read_text()
    return sorted(set(re.findall(r"^\s+- urn:elector:problem:([a-z-]+)$", text, re.M)))


def slugs_in_api():
    text = (REPO / "api" / "problem.go").read_text()
    block = text[text.index("var problemKinds") :]
    block = block[: block.index("\n}\n")]
    return sorted(set(re.findall(r'^\s+"([a-z-]+)":', block, re.M)))


def test_every_problem_type_of_the_api_has_its_class():
    openapi, api = slugs_in_openapi(), slugs_in_api()
    assert len(openapi) > 30 and openapi == api
    assert sorted(PROBLEM_CLASSES) == openapi


@pytest.mark.parametrize("slug", sorted(PROBLEM_CLASSES))
def test_a_problem_document_raises_the_class_of_its_type(slug):
    doc = {"type": PROBLEM_TYPE_PREFIX + slug, "title": "T", "status": 409, "detail": "d", "instance": "/x", "field": "ttl"}
    e = problem_from_response(409, "application/problem+json", json.dumps(doc).encode(), "3")
    assert type(e) is PROBLEM_CLASSES[slug]
    assert isinstance(e, elector.ProblemError) and isinstance(e, elector.ElectorError)
    assert (e.type, e.status, e.title, e.detail, e.instance, e.slug) == (doc["type"], 409, "T", "d", "/x", slug)
    assert e.extensions == {"field": "ttl"} and e.retry_after == 3
    assert str(e) == "elector: T (409): d"


def test_the_stable_names_callers_catch():
    for name, slug in [
        ("CandidateNotFoundError", "candidate-not-found"),
        ("TokenMismatchError", "candidate-token-mismatch"),
        ("NoLeaderError", "no-leader"),
        ("TransferPendingError", "transfer-pending"),
        ("RateLimitedError", "rate-limited"),
        ("UnavailableError", "backend-unavailable"),
    ]:
        assert getattr(elector, name) is PROBLEM_CLASSES[slug]
    assert issubclass(elector.MalformedJSONError, elector.InvalidRequestError)


def test_transfer_pending_carries_the_transfer():
    doc = {"type": PROBLEM_TYPE_PREFIX + "transfer-pending", "status": 409, "transfer": {"to": "b", "reason": "transferred"}}
    e = problem_from_response(409, "application/problem+json", json.dumps(doc).encode(), None)
    assert isinstance(e, elector.TransferPendingError) and e.transfer == {"to": "b", "reason": "transferred"}


@pytest.mark.parametrize(
    "status, ctype, body, cls, detail",
    [
        pytest.param(502, "text/html", b"<h1>Bad gateway</h1>", elector.UnavailableError, "<h1>Bad gateway</h1>", id="a proxy's 5xx page"),
        pytest.param(404, "text/plain", b"nope\n", elector.ProblemError, "nope", id="a 4xx that is not a problem"),
        pytest.param(503, "application/json", b"not json", elector.UnavailableError, "not json", id="broken JSON"),
        pytest.param(418, "application/problem+json", b'{"type": "urn:other:x", "status": 418}', elector.ProblemError, "", id="a foreign problem type"),
    ],
)
def test_answers_that_are_not_our_problems(status, ctype, body, cls, detail):
    e = problem_from_response(status, ctype, body, None)
    assert type(e) is cls and e.status == status and e.detail == detail and e.slug == ""


def test_a_revoked_candidacy_is_still_candidate_not_found_and_says_when():
    doc = {
        "type": PROBLEM_TYPE_PREFIX + "candidate-not-found",
        "status": 404,
        "detail": "the backend ended its candidacy",
        "revoked": {"at": "2026-11-22T10:00:01.5Z", "expires_at": "2026-11-22T10:00:05.500000001Z"},
    }
    e = problem_from_response(404, "application/problem+json", json.dumps(doc).encode(), None)
    assert type(e) is elector.CandidacyRevokedError
    assert isinstance(e, elector.CandidateNotFoundError) and e.slug == "candidate-not-found"
    utc = datetime.timezone.utc
    assert e.revoked_at == datetime.datetime(2026, 11, 22, 10, 0, 1, 500000, tzinfo=utc)
    assert e.expires_at == datetime.datetime(2026, 11, 22, 10, 0, 5, 500000, tzinfo=utc)


@pytest.mark.parametrize("revoked", [None, "2026-11-22T10:00:01Z", ["at"]])
def test_candidate_not_found_without_a_revoked_object_is_plain(revoked):
    doc = {"type": PROBLEM_TYPE_PREFIX + "candidate-not-found", "status": 404}
    if revoked is not None:
        doc["revoked"] = revoked
    e = problem_from_response(404, "application/problem+json", json.dumps(doc).encode(), None)
    assert type(e) is elector.CandidateNotFoundError


def test_a_revoked_member_with_unreadable_times_still_raises_the_class():
    doc = {"type": PROBLEM_TYPE_PREFIX + "candidate-not-found", "status": 404, "revoked": {"at": "yesterday"}}
    e = problem_from_response(404, "application/problem+json", json.dumps(doc).encode(), None)
    assert type(e) is elector.CandidacyRevokedError and e.revoked_at is None and e.expires_at is None
