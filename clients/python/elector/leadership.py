"""Leadership: the signal a Candidacy gives its leader's code."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable, List, Optional

from .errors import LeadershipLost

# Why a leadership ended, or a Candidacy's standing changed (the Go
# client's vocabulary).
REASON_ELECTED = "elected"  # a heartbeat (or the campaign) said it leads
REASON_LOST = "lost"  # a heartbeat said it no longer leads
REASON_EXPIRED = "expired"  # the candidacy was gone (404): it campaigns again
REASON_HEARTBEAT_TIMEOUT = "heartbeat-timeout"  # the step-down rule
REASON_ERROR = "error"  # report_error, or the gateway holds it in error
REASON_RESIGNED = "resigned"  # resign or close
REASON_TRANSFERRED = "transferred"  # asked to hand over; it stopped, then handed over

@dataclasses.dataclass(frozen=True)
class Standing:
    """Where a Candidacy stands. ``leading``: act as leader (the gateway
    confirmed it with a heartbeat and the step-down deadline has not passed
    since). ``state``: the candidate's state at the gateway as last heard,
    "" while it holds no candidacy. ``term``: the leadership's while
    leading, else the last heard of. ``leader``: the current leader's id as
    last heard, "" when none or unknown. ``reason``: why the standing last
    changed, a REASON_* constant."""

    leading: bool = False
    state: str = ""
    term: int = 0
    leader: str = ""
    reason: str = ""


Clock = Callable[[], float]
_log = logging.getLogger("elector")


class Leadership:
    """One leadership of a Candidacy: its ``term`` (the fencing token to
    pass to what the leader guards) and whether it still holds.

    It ends when the Candidacy learns that leadership may be lost (a
    heartbeat says another leads, the candidacy expired, it resigned,
    reported an error or was asked to hand over), and at the step-down
    deadline at the latest: the send time of the last successful heartbeat
    plus TTL minus the margin. Every check looks at the clock itself, so a
    process that was paused past the deadline (SIGSTOP, a suspended VM)
    sees the leadership over at its first look, before any other thread
    has run. Safe for concurrent use.

    ``active`` and ``stopped`` (a ``threading.Event``-like object:
    ``stopped.is_set()``, ``stopped.wait(timeout)``) tell; ``check()``
    raises LeadershipLost once it has ended; ``add_done_callback``
    registers a function called once when it ends.
    """

    def __init__(self, term: int, deadline: float, *, clock: Clock = time.monotonic, name: str = "") -> None:
        self.term = term
        self._clock = clock
        self._cond = threading.Condition()
        self._deadline = deadline
        self._reason: Optional[str] = None
        self._callbacks: List[Callable[["Leadership"], None]] = []
        self.since = clock()
        self.stopped = _Stopped(self)
        t = threading.Thread(target=self._expire, name="elector-leadership-%s-%d" % (name, term), daemon=True)
        t.start()

    def __repr__(self) -> str:
        state = "active" if self._reason is None else "ended: %s" % self._reason
        return "<Leadership term=%d %s>" % (self.term, state)

    @property
    def active(self) -> bool:
        """Whether to act as leader now: not ended, deadline not passed."""
        return not self.stopped.is_set()

    def __bool__(self) -> bool:
        return self.active

    @property
    def deadline(self) -> float:
        """The step-down deadline, on the Candidacy's clock
        (time.monotonic by default). It moves later with each heartbeat
        the gateway confirms."""
        with self._cond:
            return self._deadline

    def time_left(self) -> float:
        """Seconds until the step-down deadline, 0 once ended."""
        with self._cond:
            if self._reason is not None:
                return 0.0
            return max(0.0, self._deadline - self._clock())

    @property
    def reason(self) -> Optional[str]:
        """Why it ended (a REASON_* constant), None while active."""
        self.stopped.is_set()
        return self._reason

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the leadership ends or ``timeout`` seconds pass;
        True if it ended."""
        return self.stopped.wait(timeout)

    def check(self) -> None:
        """Raises LeadershipLost if the leadership has ended. Call it
        before each act of the leader."""
        if self.stopped.is_set():
            raise LeadershipLost(self.term, self._reason or REASON_HEARTBEAT_TIMEOUT)

    def add_done_callback(self, fn: Callable[["Leadership"], None]) -> None:
        """Calls ``fn(leadership)`` once when it ends (at once if it has),
        from the thread that ends it: it must return quickly."""
        with self._cond:
            if self._reason is None:
                self._callbacks.append(fn)
                return
        _call(fn, self)

    # Used by the Candidacy.

    def extend(self, deadline: float) -> None:
        with self._cond:
            if self._reason is None:
                self._deadline = deadline
                self._cond.notify_all()

    def end(self, reason: str) -> bool:
        """Ends the leadership; False if it had ended already."""
        with self._cond:
            if self._reason is not None:
                return False
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for fn in callbacks:
            _call(fn, self)
        return True

    def _passed(self) -> bool:
        """Under the lock: whether the deadline has passed while active."""
        return self._reason is None and self._clock() >= self._deadline

    def _expire(self) -> None:
        # Ends the leadership at its deadline, for the waiters and callbacks
        # that are not looking; checks look at the clock themselves.
        with self._cond:
            while self._reason is None:
                left = self._deadline - self._clock()
                if left <= 0:
                    break
                self._cond.wait(left)
        self.end(REASON_HEARTBEAT_TIMEOUT)


class _Stopped:
    """The ``stopped`` side of a Leadership, shaped like threading.Event."""

    def __init__(self, leadership: Leadership) -> None:
        self._l = leadership

    def is_set(self) -> bool:
        l = self._l
        with l._cond:
            passed = l._passed()
            if not passed:
                return l._reason is not None
        l.end(REASON_HEARTBEAT_TIMEOUT)
        return True

    def wait(self, timeout: Optional[float] = None) -> bool:
        l = self._l
        end = None if timeout is None else l._clock() + timeout
        while True:
            with l._cond:
                if l._reason is not None:
                    return True
                now = l._clock()
                if now >= l._deadline:
                    break
                left = l._deadline - now
                if end is not None:
                    if now >= end:
                        return False
                    left = min(left, end - now)
                l._cond.wait(left)
        l.end(REASON_HEARTBEAT_TIMEOUT)
        return True


def _call(fn: Callable[[Leadership], None], l: Leadership) -> None:
    try:
        fn(l)
    except Exception:  # a callback's failure must not stop the others
        _log.exception("elector: a leadership done callback failed")
