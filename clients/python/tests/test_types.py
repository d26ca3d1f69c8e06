"""The API's times and durations, read as Python 3.9 can."""

from __future__ import annotations

import datetime as dt

import pytest

from elector.types import Event, format_duration, parse_duration, parse_time

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    "text, want",
    [
        ("2026-11-22T10:00:00.123456Z", dt.datetime(2026, 11, 22, 10, 0, 0, 123456, UTC)),
        ("2026-11-22T10:00:00.123456789Z", dt.datetime(2026, 11, 22, 10, 0, 0, 123456, UTC)),
        ("2026-11-22T10:00:00.1Z", dt.datetime(2026, 11, 22, 10, 0, 0, 100000, UTC)),
        ("2026-11-22T10:00:00Z", dt.datetime(2026, 11, 22, 10, 0, 0, 0, UTC)),
        ("2026-11-22T12:30:00+02:30", dt.datetime(2026, 11, 22, 10, 0, 0, 0, UTC)),
        ("", None),
        (None, None),
    ],
)
def test_parse_time(text, want):
    assert parse_time(text) == want


@pytest.mark.parametrize("text", ["yesterday", "2026-11-22 10:00:00Z", "2026-11-22T10:00:00", 5])
def test_parse_time_refuses_what_is_not_rfc3339(text):
    with pytest.raises(ValueError):
        parse_time(text)


@pytest.mark.parametrize(
    "text, want",
    [("10s", 10), ("1m30s", 90), ("500ms", 0.5), ("1h", 3600), ("0s", 0), ("0", 0), ("1.5s", 1.5), ("2µs", 2e-6), ("-1s", -1)],
)
def test_parse_duration(text, want):
    assert parse_duration(text) == pytest.approx(want)


@pytest.mark.parametrize("text", ["", "10", "s", "1x", "1s2", " 1s"])
def test_parse_duration_refuses_what_go_refuses(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("seconds, want", [(10, "10s"), (0.5, "500ms"), (1.25, "1250ms"), (3600, "3600s")])
def test_format_duration_round_trips(seconds, want):
    assert format_duration(seconds) == want
    assert parse_duration(want) == seconds


def test_events_decode_transitions_and_resets():
    ev = Event.from_json("8", "leader.begin", {
        "type": "leader.begin", "timestamp": "2026-11-22T10:00:00.123456Z",
        "data": {"election": "billing", "term": 42, "candidate": {"id": "node-a", "metadata": {"addr": "x"}},
                 "previous": {"id": "node-b", "term": 41}, "reason": "expired"}})
    assert ev.data is not None and ev.snapshot is None
    assert (ev.data.term, ev.data.candidate.id, ev.data.previous.term, ev.data.reason) == (42, "node-a", 41, "expired")
    reset = Event.from_json("", "reset", {
        "type": "reset", "timestamp": "2026-11-22T10:00:00.1Z",
        "data": {"election": "billing", "settings": {"error_cooldown": "10s", "handover_delay": "0s"}, "term": 41,
                 "leader": {"id": "node-b", "term": 41, "metadata": {}, "since": "2026-11-22T09:58:00.2Z",
                            "expires_at": "2026-11-22T10:00:09.3Z"}, "candidates": []}})
    assert reset.snapshot is not None and reset.snapshot.leader.id == "node-b" and reset.snapshot.settings.error_cooldown == 10
