"""Retry timing: back-off with jitter, Retry-After, the leader's floor."""

from __future__ import annotations

import email.utils

import pytest

import elector
from elector._backoff import retry_delay, step_down_margin
from elector.errors import parse_retry_after


@pytest.mark.parametrize(
    "failures, retry_after, jitter, want",
    [
        pytest.param(1, 0, 0, 0.05, id="first failure, no jitter"),
        pytest.param(1, 0, 0.999, 0.09995, id="first failure, most jitter"),
        pytest.param(3, 0, 0.5, 0.3, id="third failure doubles twice"),
        pytest.param(40, 0, 0.999, 1.999, id="capped at the limit"),
        pytest.param(1, 1.0, 0, 1.0, id="Retry-After lengthens the wait"),
        pytest.param(1, 3600.0, 0, 2.0, id="Retry-After is capped at the limit"),
        pytest.param(3, 0.001, 0, 0.2, id="a shorter Retry-After does not shorten it"),
    ],
)
def test_retry_delay_doubles_with_jitter_and_honours_retry_after(failures, retry_after, jitter, want):
    assert retry_delay(0.1, 2.0, failures, retry_after, jitter) == pytest.approx(want)


@pytest.mark.parametrize("ttl, margin", [(1, 0.5), (3, 0.5), (5, 0.5), (10, 1.0), (60, 6.0)])
def test_step_down_margin_is_a_tenth_of_the_ttl_at_least_half_a_second(ttl, margin):
    assert step_down_margin(ttl) == margin
    assert elector.step_down_margin(ttl) == margin


NOW = 1795341600.0


@pytest.mark.parametrize(
    "value, want",
    [
        pytest.param(None, 0, id="absent"),
        pytest.param("2", 2, id="seconds"),
        pytest.param(email.utils.formatdate(NOW + 90, usegmt=True), 90, id="date"),
        pytest.param(email.utils.formatdate(NOW - 60, usegmt=True), 0, id="past date"),
        pytest.param("soon", 0, id="garbage"),
        pytest.param("-3", 0, id="negative"),
        pytest.param("²", 0, id="not ASCII digits"),
    ],
)
def test_parse_retry_after_reads_seconds_and_dates(value, want):
    assert parse_retry_after(value, NOW) == pytest.approx(want)


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize(
    "leading, failures_before, since, want",
    [
        pytest.param(False, 2, 9.5, 5.0, id="follower, third failure: the back-off"),
        pytest.param(True, 0, 5.0, 1.5, id="leader, first failure: the back-off is shorter"),
        pytest.param(True, 2, 9.5, 2.0, id="leader, third failure: half the time left"),
        pytest.param(True, 5, 13.45, elector.candidacy.LEADER_RETRY_FLOOR, id="leader near its deadline: the floor"),
    ],
)
def test_a_leader_retries_before_its_step_down_deadline(leading, failures_before, since, want):
    # TTL 15 s: interval 5 s, retry base 1.5 s, step-down 13.5 s after the last success.
    clock = FakeClock()
    c = elector.Candidacy("http://127.0.0.1:1", "e", "a", ttl=15, clock=clock, jitter=lambda: 0.999999)
    c._token, c._leading, c._failures = "t", leading, failures_before
    c._succeeded(clock.t)
    clock.t += since
    assert c._retry("heartbeat", elector.TransportError("down")) == pytest.approx(want, rel=1e-4)
