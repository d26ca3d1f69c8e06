"""The leadership signal ends at its deadline at the latest, and every
check looks at the clock itself."""

from __future__ import annotations

import threading
import time

import pytest

import elector
from elector import Leadership, LeadershipLost


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_check_after_a_pause_past_the_deadline_sees_it_over():
    clock = FakeClock()
    ended = []
    l = Leadership(3, clock.t + 10, clock=clock)
    l.add_done_callback(lambda l: ended.append(l.reason))
    assert l.active and not l.stopped.is_set() and l.reason is None and l.time_left() == 10
    l.check()
    clock.t += 10  # the process was paused: no thread has run since
    assert not l.active
    assert ended == [elector.REASON_HEARTBEAT_TIMEOUT]
    with pytest.raises(LeadershipLost) as e:
        l.check()
    assert e.value.term == 3 and e.value.reason == "heartbeat-timeout"
    assert l.stopped.wait(0) and l.time_left() == 0


def test_extend_moves_the_deadline_while_active_only():
    clock = FakeClock()
    l = Leadership(1, clock.t + 5, clock=clock)
    clock.t += 4
    l.extend(clock.t + 5)
    clock.t += 4
    assert l.active and l.deadline == 1009
    l.end(elector.REASON_LOST)
    l.extend(clock.t + 100)
    assert not l.active and l.reason == "lost" and l.deadline == 1009


def test_the_first_reason_wins_and_callbacks_run_once():
    l = Leadership(1, time.monotonic() + 60)
    calls = []
    l.add_done_callback(lambda l: calls.append(("a", l.reason)))
    assert l.end(elector.REASON_TRANSFERRED)
    assert not l.end(elector.REASON_RESIGNED)
    l.add_done_callback(lambda l: calls.append(("b", l.reason)))  # after the end: at once
    assert calls == [("a", "transferred"), ("b", "transferred")]


def test_it_ends_by_itself_at_the_deadline_and_wakes_its_waiters():
    l = Leadership(1, time.monotonic() + 0.3)
    fired = threading.Event()
    when = []
    l.add_done_callback(lambda l: (when.append(time.monotonic()), fired.set()))
    assert not l.wait(0.05)
    assert l.wait(10)  # returns at the deadline, not after the 10 s
    assert fired.wait(10) and l.reason == "heartbeat-timeout"
    assert when[0] >= l.deadline


def test_waiters_follow_an_extended_deadline():
    l = Leadership(1, time.monotonic() + 0.2)
    l.extend(time.monotonic() + 60)
    assert not l.wait(0.4)  # past the first deadline, still active
    assert l.active
    l.end(elector.REASON_RESIGNED)
    assert l.wait(0) and l.reason == "resigned"


def test_a_failing_callback_does_not_stop_the_others():
    l = Leadership(1, time.monotonic() + 60)
    calls = []
    l.add_done_callback(lambda l: 1 / 0)
    l.add_done_callback(lambda l: calls.append(1))
    l.end(elector.REASON_LOST)
    assert calls == [1]
