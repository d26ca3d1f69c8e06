"""Retry timing shared by the Candidacy and the watches."""

from __future__ import annotations

MAX_RETRY_DELAY = 30.0
"""The cap of the back-off of a candidate whose campaigns fail. A candidate
that holds a candidacy retries at least every TTL/3, so that a short outage
does not cost it its place in line."""
LEADER_RETRY_FLOOR = 0.1
"""The shortest wait between a leader's tries."""
MIN_MARGIN = 0.5
"""The smallest step-down margin, in seconds."""


def step_down_margin(ttl: float) -> float:
    """How long before its TTL runs out, counted from when its last
    successful heartbeat was sent, a leader stops acting as leader: the
    larger of TTL/10 and 500 ms (as the Go client's StepDownMargin)."""
    return max(ttl / 10.0, MIN_MARGIN)


def retry_delay(base: float, limit: float, failures: int, retry_after: float, jitter: float) -> float:
    """The wait before retry number ``failures`` (1 for the first) of a
    request that failed: ``base`` doubled per failure up to ``limit``, with
    equal jitter (half fixed, half scaled by ``jitter``, a number in
    [0, 1)) so that candidates cut off together do not come back in step,
    and never shorter than the ``retry_after`` the gateway asked for, up to
    ``limit``."""
    d = base
    i = 1
    while i < failures and d < limit:
        d *= 2
        i += 1
    d = min(d, limit)
    d = d / 2 + (d / 2) * jitter
    return max(d, min(retry_after, limit))
