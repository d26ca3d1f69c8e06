"""Watch and observe over SSE, resuming after dropped connections."""

from __future__ import annotations

import queue
import threading

import pytest

import elector


def reader(w):
    """Reads a watch in a thread; returns a queue of what it yields, then
    of the exception that ended it (or None)."""
    q: "queue.Queue" = queue.Queue()

    def run() -> None:
        try:
            for x in w:
                q.put(x)
            q.put(None)
        except Exception as e:  # handed to the test
            q.put(e)

    threading.Thread(target=run, daemon=True).start()
    return q


def test_watch_starts_with_reset_and_resumes_after_dropped_connections(gateway, proxy, election):
    p = proxy(gateway)
    camp = elector.Client(gateway.url)  # not through the proxy: drops do not touch it
    camp.campaign(election, "first", ttl=60)
    w = elector.Client(p.url, reconnect_delay=0.02).watch(election)
    q = reader(w)
    reset = q.get(timeout=10)
    assert reset.type == "reset" and reset.snapshot.leader.id == "first" and reset.id
    seen = {reset.id}
    i = 0
    while i < 8:
        camp.campaign(election, "c%d" % i, ttl=60)
        ev = q.get(timeout=10)
        assert ev.type == "candidate.joined" and ev.data.candidate.id == "c%d" % i and ev.id not in seen
        seen.add(ev.id)
        i += 1
        if i % 2:
            p.drop()
            # Campaign while the watcher is away: it gets this one when it
            # resumes, once.
            camp.campaign(election, "c%d" % i, ttl=60)
            ev = q.get(timeout=10)
            assert ev.type == "candidate.joined" and ev.data.candidate.id == "c%d" % i and ev.id not in seen
            seen.add(ev.id)
            i += 1
    assert w.last_event_id == ev.id
    with pytest.raises(queue.Empty):
        q.get(timeout=0.3)
    w.close()
    assert q.get(timeout=5) is None  # close ends the iteration


def test_watch_from_an_event_id_replays_what_followed(gateway, election):
    c = elector.Client(gateway.url)
    c.campaign(election, "a", ttl=60)
    with c.watch(election) as w:
        first = next(w)
    c.campaign(election, "b", ttl=60)
    with c.watch(election, first.id) as w:
        ev = next(w)
    assert ev.type == "candidate.joined" and ev.data.candidate.id == "b"


def test_watch_of_every_election(gateway, election):
    c = elector.Client(gateway.url)
    with c.watch() as w:  # no reset on a fresh stream of every election: new events only
        c.campaign(election, "a", ttl=60)
        for ev in w:
            if ev.data is not None and ev.data.election == election:
                break
    assert ev.type in ("candidate.joined", "leader.begin") and ev.id


def test_watch_fails_at_once_for_a_bad_election_name(gateway):
    with pytest.raises(elector.InvalidRequestError):
        elector.Client(gateway.url).watch("Not Valid")


def test_a_silent_stream_is_taken_for_dead_and_resumed(gateway, proxy, election):
    p = proxy(gateway)
    camp = elector.Client(gateway.url)
    camp.campaign(election, "a", ttl=60)
    w = elector.Client(p.url, reconnect_delay=0.02, read_timeout=0.5).watch(election)
    q = reader(w)
    assert q.get(timeout=10).type == "reset"
    p.stall.set()  # nothing passes, not even keep-alive comments
    camp.campaign(election, "b", ttl=60)
    with pytest.raises(queue.Empty):
        q.get(timeout=0.7)
    p.stall.clear()
    ev = q.get(timeout=10)
    assert ev.type == "candidate.joined" and ev.data.candidate.id == "b"
    w.close()


def test_observe_reports_leader_changes_and_no_leader(gateway, election):
    c = elector.Client(gateway.url)
    a = c.campaign(election, "a", ttl=60)
    o = c.observe(election)
    q = reader(o)
    b = c.campaign(election, "b", ttl=60)
    c.resign(election, "a", a.token)
    c.resign(election, "b", b.token)
    got = [q.get(timeout=10) for _ in range(4)]
    assert [(l.id, l.term) for l in got] == [("a", 1), ("", 1), ("b", 2), ("", 2)]
    assert all(l.election == election for l in got)
    o.close()
    assert q.get(timeout=5) is None
