"""Candidacy: campaigns for you and tells your code while it leads."""

from __future__ import annotations

import collections
import logging
import random
import ssl
import threading
import time
from typing import Any, Callable, Deque, Dict, Optional, Sequence, Union

from ._backoff import LEADER_RETRY_FLOOR, MAX_RETRY_DELAY, step_down_margin
from ._candidacy_loop import _Loop
from ._candidacy_stream import _Stream
from ._dispatch import _Dispatcher, _Request
from ._http import Abort
from .client import DEFAULT_USER_AGENT, Client
from .errors import ElectorError, InvalidConfigError, NotRunningError
from .leadership import REASON_RESIGNED, Leadership, Standing
from .types import Status
from .watch import Observe, Watch

DEFAULT_TTL = 10.0
DEFAULT_ERROR_TIMEOUT = 10.0

OnStarted = Callable[[Leadership], None]
OnStopped = Callable[[int, str], None]

__all__ = [
    "Candidacy", "Standing", "DEFAULT_TTL", "DEFAULT_ERROR_TIMEOUT", "MAX_RETRY_DELAY", "LEADER_RETRY_FLOOR",
]


class Candidacy(_Loop, _Stream):
    """Campaigns in an election and keeps the candidacy alive, as etcd's
    concurrency.Election or client-go's leaderelection do, with the Go
    client's semantics: it heartbeats every TTL/3, campaigns again when the
    candidacy is gone, obeys the step-down rule, tries the next gateway
    when one fails, backs off with jitter while the gateways are
    unreachable or ask it to (429, 503, Retry-After), and learns that it
    leads from the election's event stream at once, confirming with a
    heartbeat before it says so.

    ``on_started_leading(leadership)`` is called, in a thread of its own,
    when the gateway has confirmed that this candidate leads; do the
    leader's work until ``leadership`` ends (``leadership.stopped.wait()``,
    ``leadership.active``, ``leadership.check()``), which is at the
    step-down deadline at the latest, and pass ``leadership.term`` to what
    you guard. ``on_stopped_leading(term, reason)`` follows after it has
    returned; callbacks never overlap and come in order. Without
    callbacks, ``wait_leadership()`` returns the current Leadership.

    Use it as a context manager, or ``start()`` and ``close()``: closing
    ends the leadership, waits for the callbacks to return (until the
    step-down deadline at most) and resigns, so the next candidate leads at
    once. ``report_error(reason)`` gives the leadership up when the work
    cannot start: the candidacy sits out ``error_timeout`` and campaigns
    again at the back of the line. When the gateway asks the leader to hand
    over (a transfer), the leadership ends at once, and once the callbacks
    have returned the Candidacy hands over (or, with
    ``explicit_handover``, the caller calls ``handover()``).

    Times are seconds. ``clock`` (default time.monotonic) is the clock of
    the step-down rule. Methods are safe for concurrent use.
    """

    def __init__(
        self,
        gateways: Union[str, Sequence[str]],
        election: str,
        id: str,
        *,
        ttl: float = DEFAULT_TTL,
        metadata: Optional[Dict[str, Any]] = None,
        priority: int = 0,
        on_started_leading: Optional[OnStarted] = None,
        on_stopped_leading: Optional[OnStopped] = None,
        on_campaigned: Optional[Callable[[Status], None]] = None,
        error_timeout: float = DEFAULT_ERROR_TIMEOUT,
        explicit_handover: bool = False,
        keep_on_exit: bool = False,
        api_token: Optional[str] = None,
        user_agent: str = DEFAULT_USER_AGENT,
        ssl_context: Optional[ssl.SSLContext] = None,
        read_timeout: Optional[float] = None,
        logger: Optional[logging.Logger] = None,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if not election:
            raise InvalidConfigError("election is required")
        if not id:
            raise InvalidConfigError("id is required")
        if ttl < 1:
            raise InvalidConfigError("ttl %gs is below 1s" % ttl)
        if error_timeout < 0:
            raise InvalidConfigError("error_timeout %gs is negative" % error_timeout)
        self.election = election
        self.id = id
        self.ttl = float(ttl)
        self.metadata = metadata
        self.priority = priority
        self.error_timeout = float(error_timeout)
        self.explicit_handover = explicit_handover
        self.keep_on_exit = keep_on_exit
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_campaigned = on_campaigned
        self._log = logger or logging.getLogger("elector")
        self._clock = clock
        self._jitter = jitter
        kwargs: Dict[str, Any] = {}
        if read_timeout is not None:
            kwargs["read_timeout"] = read_timeout
        self.client = Client(
            gateways, api_token=api_token, user_agent=user_agent, ssl_context=ssl_context, logger=self._log, **kwargs
        )
        self.client.on_gateway_change(self._gateway_changed)

        # Shared, under _cond.
        self._cond = threading.Condition()
        self._requests: Deque[_Request] = collections.deque()
        self._poked = False
        self._stopping = False
        self._close_resign: Optional[bool] = None
        self._close_waits = True
        self._started = False
        self._done = threading.Event()
        self._error: Optional[BaseException] = None
        self._standing = Standing()
        self._current: Optional[Leadership] = None
        self._last_ok: Optional[float] = None
        self._stream_abort: Optional[Abort] = None
        self._stream: Optional[Watch] = None
        self._moved = False
        self._abort = Abort()
        self._loop_thread: Optional[threading.Thread] = None
        self._watch_thread: Optional[threading.Thread] = None
        self._callbacks: Optional[_Dispatcher] = None

        # Owned by the loop thread.
        self._token = ""
        self._leading = False
        self._term = 0
        self._sent_ok = 0.0
        self._pause_until: Optional[float] = None
        self._failures = 0

    def __repr__(self) -> str:
        return "<Candidacy %s in %s: %s>" % (self.id, self.election, self.standing)

    # Public surface.

    @property
    def margin(self) -> float:
        """The step-down margin for this TTL: max(TTL/10, 0.5 s)."""
        return step_down_margin(self.ttl)

    @property
    def standing(self) -> Standing:
        """The candidate's latest standing."""
        with self._cond:
            return self._standing

    @property
    def leadership(self) -> Optional[Leadership]:
        """The current leadership, or None while not leading."""
        with self._cond:
            l = self._current
        return l if l is not None and l.active else None

    @property
    def last_heartbeat(self) -> Optional[float]:
        """When (on ``clock``) the last successful heartbeat or campaign
        was sent, or None."""
        with self._cond:
            return self._last_ok

    @property
    def running(self) -> bool:
        return self._started and not self._done.is_set()

    @property
    def error(self) -> Optional[BaseException]:
        """Why the candidacy stopped by itself: an answer the gateway will
        keep giving (InvalidRequestError for a bad election name, id or
        metadata; UnauthenticatedError; ForbiddenError), or None."""
        return self._error

    def start(self) -> "Candidacy":
        """Starts campaigning in the background. Raises ElectorError if
        called twice."""
        with self._cond:
            if self._started:
                raise ElectorError("elector: the candidacy was started already")
            self._started = True
        self._callbacks = _Dispatcher("elector-callbacks-%s" % self.id, self._log)
        self._watch_thread = threading.Thread(target=self._watch, name="elector-watch-%s" % self.id, daemon=True)
        self._loop_thread = threading.Thread(target=self._run, name="elector-candidacy-%s" % self.id, daemon=True)
        self._watch_thread.start()
        self._loop_thread.start()
        return self

    def close(self, *, resign: Optional[bool] = None, timeout: Optional[float] = None) -> bool:
        """Stops: the leadership ends at once, the callbacks are waited for
        (until the step-down deadline at most), and the candidacy is
        resigned (unless ``keep_on_exit``, or ``resign=False``) so that the
        next candidate leads at once. Returns whether the candidacy had
        stopped within ``timeout`` seconds (None: wait as long as it takes).
        Called from a callback, it returns at once and the candidacy stops
        after the callback returns."""
        with self._cond:
            if not self._started:
                self._started = True
                self._done.set()
                return True
            self._stopping = True
            if resign is not None:
                self._close_resign = resign
            inside = self._in_own_thread()
            if inside:
                self._close_waits = False
            self._cond.notify_all()
            current = self._current
        self._abort.cancel()
        self._stop_stream()
        if current is not None:
            current.end(REASON_RESIGNED)
        if inside:
            return self._done.is_set()
        return self._done.wait(timeout)

    def resign(self, timeout: Optional[float] = None) -> bool:
        """Ends the candidacy for good, resigning even with keep_on_exit:
        close(resign=True)."""
        return self.close(resign=True, timeout=timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the candidacy has stopped (closed, or by itself);
        returns whether it has. Raises ``error`` when it stopped by itself
        because the gateway refuses its campaign."""
        done = self._done.wait(timeout)
        if done and self._error is not None:
            raise self._error
        return done

    def run(self) -> None:
        """Starts and waits until the candidacy stops; KeyboardInterrupt
        closes it (resigning) and is raised again. Raises ``error`` if the
        candidacy stopped by itself."""
        self.start()
        try:
            self.wait()
        except KeyboardInterrupt:
            self.close()
            raise

    def __enter__(self) -> "Candidacy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_leadership(self, timeout: Optional[float] = None) -> Optional[Leadership]:
        """Waits until this candidate leads and returns its Leadership; None
        when ``timeout`` seconds passed or the candidacy stopped first."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                l = self._current
            if l is not None and l.active:
                return l
            with self._cond:
                if self._done.is_set() or self._stopping:
                    return None
                if self._current is l:
                    left = None if end is None else end - time.monotonic()
                    if left is not None and left <= 0:
                        return None
                    self._cond.wait(left if left is None else min(left, 1.0))

    def report_error(self, reason: str = "", timeout: Optional[float] = None) -> None:
        """Tells the gateway that this candidate cannot lead (its work
        failed to start, say): it stops leading, the gateway hands over to
        the next in line, and after ``error_timeout`` the candidate
        campaigns again at the back of the line. ``reason`` is shown in the
        leader.error event; it must not carry secrets. May be called from
        on_started_leading.

        Raises NotRunningError, or the report's error (the candidacy was
        then resigned instead, which hands over as well)."""
        self._request(_Request("error", reason, self._in_own_thread()), timeout)

    def handover(self, timeout: Optional[float] = None) -> None:
        """Hands the leadership over to the target of the pending transfer,
        for a caller that set ``explicit_handover``: call it once the
        leader's work has stopped. The candidate stays in line as a
        follower. Raises NotRunningError, NoTransferPendingError or
        NotLeaderError (the transfer was cancelled or completed meanwhile),
        or the request's error."""
        self._request(_Request("handover", "", self._in_own_thread()), timeout)

    def observe(self) -> Observe:
        """Follows the leader of the candidate's election through the
        gateway in use; see Client.observe."""
        w = Watch(
            self.client.stream_connector(self.election, gateway=self.client.gateway_index),
            reconnect_delay=self.client.reconnect_delay, read_timeout=self.client.read_timeout, logger=self._log,
        )
        return Observe(w, self.election)

    # Requests to the loop.

    def _in_own_thread(self) -> bool:
        t = threading.current_thread()
        return (self._callbacks is not None and t is self._callbacks.thread) or t is self._loop_thread

    def _request(self, r: _Request, timeout: Optional[float]) -> None:
        if threading.current_thread() is self._loop_thread:
            # From a Leadership done callback the loop ran: it cannot wait
            # for itself.
            raise ElectorError("elector: called from the candidacy's own loop; call it from another thread")
        with self._cond:
            if not self.running or self._stopping:
                raise NotRunningError("elector: the candidacy is not running")
            self._requests.append(r)
            self._cond.notify_all()
        if not r.done.wait(timeout):
            raise ElectorError("elector: no answer within %gs" % timeout)
        if r.error is not None:
            raise r.error

    def _poke(self) -> None:
        with self._cond:
            self._poked = True
            self._cond.notify_all()
