"""Sessions against a real gateway: one liveness for many candidacies."""

from __future__ import annotations

import datetime
import time

import pytest

import elector
from conftest import wait_candidate_gone


def test_a_session_heartbeat_renews_and_its_close_resigns_every_candidacy(gateway, election):
    c = elector.Client(gateway.url)
    billing, payroll = election + "-billing", election + "-payroll"
    s = c.open_session(ttl=5)
    assert s.id.startswith("ses_") and s.token and s.ttl == 5 and s.candidates == [] and s.expires_at is not None
    assert s.token not in repr(s)
    terms = {}
    for e in (billing, payroll):
        st = c.campaign(e, "node-a", session=s)
        assert st.state == "leader" and st.ttl == 5 and st.token == s.token
        terms[e] = st.term
    b = c.campaign(billing, "node-b", ttl=60)
    before = c.candidate(payroll, "node-a").expires_at

    time.sleep(0.02)
    sent = time.monotonic()
    hb = c.heartbeat_session(s)
    assert hb.id == s.id and hb.token == s.token and hb.expires_at > s.expires_at
    assert [(x.election, x.id) for x in hb.candidates] == [(billing, "node-a"), (payroll, "node-a")]
    for x in hb.candidates:
        assert x.expires_at == hb.expires_at and x.state == "leader" and x.term == terms[x.election]
        assert hb.step_down_deadline(x.election, terms[x.election], sent) == pytest.approx(sent + 5 - 0.5)
    assert c.candidate(payroll, "node-a").expires_at > before
    # A candidacy's own heartbeat takes the session's token.
    assert c.heartbeat(billing, "node-a", s.token).state == "leader"
    # The id and the token work as well as the Session.
    assert [x.id for x in c.heartbeat_session(s.id, s.token).candidates] == ["node-a", "node-a"]

    c.close_session(s)
    assert c.candidates(payroll).candidates == []
    assert c.leader(billing).id == "node-b"
    with pytest.raises(elector.SessionNotFoundError):
        c.heartbeat_session(s)
    with pytest.raises(elector.CandidateNotFoundError):
        c.heartbeat(payroll, "node-a", s.token)
    c.resign(billing, "node-b", b.token)


def test_a_session_outlives_its_ttl_while_it_heartbeats_and_ends_when_it_stops(gateway, election):
    c = elector.Client(gateway.url)
    s = c.open_session(ttl=1)
    c.campaign(election, "node-a", session=s.id, session_token=s.token)
    end = time.monotonic() + 2
    while time.monotonic() < end:
        c.heartbeat_session(s)
        time.sleep(0.25)
    assert c.leader(election).id == "node-a"

    wait_candidate_gone(c, election, "node-a")
    with pytest.raises(elector.SessionNotFoundError):
        c.heartbeat_session(s)


def test_session_problems_come_back_typed(gateway, election):
    c = elector.Client(gateway.url)
    s = c.open_session(ttl=60)
    other = c.open_session()
    assert other.ttl == 10  # the gateway's default
    c.campaign(election, "node-a", session=s)
    cases = [
        (lambda: c.heartbeat_session(s.id, other.token), elector.SessionTokenMismatchError, 403),
        (lambda: c.close_session(s.id), elector.SessionTokenMissingError, 400),
        (lambda: c.campaign(election, "node-b", session=s), elector.SessionInElectionError, 409),
        (lambda: c.campaign(election, "node-c", session=s.id), elector.SessionTokenMissingError, 400),
        (lambda: c.campaign(election + "-x", "node-a", ttl=60, session=s), elector.InvalidRequestError, 400),
        (lambda: c.open_session(ttl=7200), elector.InvalidRequestError, 400),
    ]
    for call, cls, status in cases:
        with pytest.raises(cls) as e:
            call()
        assert type(e.value) is cls and e.value.status == status and s.token not in str(e.value)
    c.close_session(other)
    with pytest.raises(elector.SessionNotFoundError):
        c.campaign(election + "-x", "node-a", session=other)
    c.close_session(s)


def test_the_step_down_deadline_counts_what_the_heartbeat_gave_each_candidacy():
    gw = datetime.datetime(2026, 11, 27, 10, 0, tzinfo=datetime.timezone.utc)  # the heartbeat began, on the gateway's clock
    at = lambda seconds: (gw + datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    s = elector.Session.from_json({
        "id": "ses_x", "ttl": "10s", "expires_at": at(10),
        "candidates": [
            {"election": "renewed", "id": "a", "state": "leader", "term": 7, "expires_at": at(10)},
            {"election": "handing-over", "id": "a", "state": "leader", "term": 7, "expires_at": at(3)},
            {"election": "odd", "id": "a", "state": "leader", "term": 7, "expires_at": at(3600)},
        ],
    })
    sent = 1000.0  # our clock, unrelated to the gateway's
    assert s.step_down_deadline("renewed", 7, sent) == pytest.approx(sent + 10 - 1)
    assert s.step_down_deadline("handing-over", 7, sent) == pytest.approx(sent + 3 - 1)
    assert s.step_down_deadline("odd", 7, sent) == pytest.approx(sent + 10 - 1)  # never more than the TTL
    assert s.step_down_deadline("elsewhere", 7, sent) is None
    c = s.candidate("renewed")
    assert c.id == "a" and c.state == elector.STATE_LEADER and c.term == 7 and s.token is None


@pytest.mark.parametrize(
    "state, term, leads_with, leads",
    [
        ("leader", 7, 7, True),  # the caller's very term
        ("leader", 9, 7, False),  # leads again, with a later term: fenced off
        ("leader", 7, 6, False),
        ("follower", 7, 7, False),  # deposed (a lowered holders setting), yet renewed
        ("error", 8, 8, False),  # deposed (a failed begin webhook), yet renewed
        ("error", 8, 7, False),
        (None, None, 0, False),  # an answer without state or term
        (None, None, 7, False),
    ],
)
def test_the_step_down_deadline_needs_the_candidacy_to_lead_with_the_callers_term(state, term, leads_with, leads):
    entry = {"election": "billing", "id": "a", "expires_at": "2026-11-27T10:00:10Z"}
    if state is not None:
        entry.update(state=state, term=term)
    s = elector.Session.from_json({"id": "ses_x", "ttl": "10s", "expires_at": "2026-11-27T10:00:10Z", "candidates": [entry]})
    got = s.step_down_deadline("billing", leads_with, 1000.0)
    if leads:
        assert got == pytest.approx(1000.0 + 10 - 1)
    else:
        assert got is None
