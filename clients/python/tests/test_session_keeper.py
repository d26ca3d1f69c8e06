"""SessionKeeper against a real gateway: a session that heartbeats itself,
and the step-down rule for its leaders."""

from __future__ import annotations

import datetime
import threading
import time

import pytest

import elector
from conftest import wait_candidate_gone
from elector.session_keeper import SessionKeeper


def test_a_kept_session_keeps_its_leaders_past_the_ttl_and_close_resigns_them(gateway, election):
    c = elector.Client(gateway.url)
    billing, payroll = election + "-billing", election + "-payroll"
    k = elector.keep_session(c, ttl=1)
    try:
        leads = {}
        for e in (billing, payroll):
            st, sent = k.campaign(e, "node-a")
            assert st.state == "leader"
            leads[e] = k.lead(e, st.term, sent)
        assert k.wait_answers(7, timeout=10)  # more than twice the TTL
        s, _ = k.last()
        for e, lead in leads.items():
            assert lead.leading(), lead.reason
            sc = s.candidate(e)
            assert sc is not None and sc.state == "leader" and sc.term == lead.term
            assert c.leader(e).id == "node-a"
    finally:
        k.close()
    assert k.done.is_set() and k.error is None
    for e, lead in leads.items():
        assert not lead.leading() and "session ended" in (lead.reason or "")
        with pytest.raises(elector.CandidateNotFoundError):
            c.candidate(e, "node-a")
    assert not k.lead(billing, 1, time.monotonic()).leading()


def test_a_lead_ends_with_the_leadership(gateway, election):
    c = elector.Client(gateway.url)
    with elector.keep_session(c, ttl=1) as k:
        st, sent = k.campaign(election + "-t", "node-a")
        transferred = k.lead(election + "-t", st.term, sent)
        c.campaign(election + "-t", "node-b", ttl=60)
        c.transfer(election + "-t", "node-b")

        st, sent = k.campaign(election + "-r", "node-a")
        resigned = k.lead(election + "-r", st.term, sent)
        c.resign(election + "-r", "node-a", k.token)

        # The leader asked to hand over is not renewed: its deadline comes
        # first, or an answer that shows node-b leading.
        assert transferred.wait(10), "the transferred leadership did not end"
        assert "session ended" not in (transferred.reason or ""), transferred.reason
        assert resigned.wait(10), "the resigned leadership did not end"
        assert "no longer leads" in (resigned.reason or ""), resigned.reason
        assert not k.done.is_set()


def test_a_cut_off_keeper_steps_down_and_ends_once_the_session_is_gone(gateway, proxy, election):
    p = proxy(gateway)
    c = elector.Client(p.url)
    k = SessionKeeper(c, ttl=2)
    try:
        st, sent = k.campaign(election, "node-a")
        lead = k.lead(election, st.term, sent)
        assert k.wait_answers(1, timeout=10)
        p.set_cut(True)
        _, last = k.last()
        assert lead.wait(20), "the leadership did not end while no heartbeat got through"
        assert "step-down deadline" in (lead.reason or ""), lead.reason
        assert k.last()[1] == last and not k.done.is_set()

        wait_candidate_gone(elector.Client(gateway.url), election, "node-a")
        p.set_cut(False)
        assert k.done.wait(20), "the keeper did not end once the gateway said the session was gone"
        assert isinstance(k.error, elector.SessionNotFoundError)
    finally:
        k.close()


def test_lead_deadlines_follow_the_newest_answer_that_names_the_candidacy():
    # Without a gateway: the keeper's state is set by hand, as its thread
    # would set it, and no timer fires within the test.
    ttl = 10.0
    margin = elector.step_down_margin(ttl)
    gw = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

    def answer(*cands):
        return elector.Session(id="ses_x", ttl=ttl, expires_at=gw + datetime.timedelta(seconds=ttl), candidates=list(cands))

    def leader(term, expires):
        return elector.SessionCandidate(election="e", id="a", state="leader", term=term,
                                        expires_at=gw + datetime.timedelta(seconds=expires))

    base = time.monotonic() + 3600
    cases = [
        # (last answer, its sent, since, later answers [(answer, sent)], want deadline or None: ended)
        ("before any answer", answer(), 0, 1, [], ttl - margin),
        ("renewed later", answer(), 0, 1, [(answer(leader(7, ttl)), 4)], 4 + ttl - margin),
        ("named in the last answer", answer(leader(7, ttl)), 2, 1, [], 2 + ttl - margin),
        ("asked to hand over", answer(), 0, 1, [(answer(leader(7, ttl)), 2), (answer(leader(7, 4)), 5)], 5 + 4 - margin),
        ("answered before the campaign", answer(), 0, 1, [(answer(), 0.5)], ttl - margin),
        ("gone after the campaign", answer(), 0, 1, [(answer(), 2)], None),
        ("another term", answer(), 0, 1, [(answer(leader(8, ttl)), 0.5)], None),
    ]
    for name, last, last_sent, since, later, want in cases:
        k = SessionKeeper.__new__(SessionKeeper)
        k.ttl, k._lock = ttl, threading.Lock()
        k._changed = threading.Condition(k._lock)
        k._last, k._sent, k._answers, k._leads = last, base + last_sent, 0, set()
        k.done, k.error = threading.Event(), None
        lead = k.lead("e", 7, base + since)
        for s, sent in later:
            k._answered(s, base + sent)
        if want is None:
            assert lead.lost.is_set(), name
        else:
            assert not lead.lost.is_set(), (name, lead.reason)
            assert abs(lead.deadline - (base + want)) < 1e-6, (name, lead.deadline - base, want)
        lead.cancel()
