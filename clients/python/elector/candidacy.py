"""Candidacy: campaigns for you and tells your code while it leads."""

from __future__ import annotations

import collections
import dataclasses
import logging
import random
import ssl
import threading
import time
from typing import Any, Callable, Deque, Dict, Optional, Sequence, Union

from ._backoff import retry_delay, step_down_margin
from ._http import Abort
from .client import DEFAULT_USER_AGENT, Client
from .errors import (
    PROBLEM_TYPE_PREFIX,
    CandidateExistsError,
    CandidateNotFoundError,
    ElectionNotFoundError,
    ElectorError,
    ForbiddenError,
    InvalidConfigError,
    InvalidRequestError,
    NoTransferPendingError,
    NotLeaderError,
    NotRunningError,
    ProblemError,
    TokenMismatchError,
    TransferPendingError,
    UnauthenticatedError,
)
from .leadership import (
    REASON_ELECTED,
    REASON_ERROR,
    REASON_EXPIRED,
    REASON_HEARTBEAT_TIMEOUT,
    REASON_LOST,
    REASON_RESIGNED,
    REASON_TRANSFERRED,
    Leadership,
)
from .types import (
    EVENT_CANDIDATE_LEFT,
    EVENT_LEADER_BEGIN,
    EVENT_LEADER_END,
    EVENT_LEADER_ERROR,
    EVENT_LEADER_TRANSFER,
    EVENT_RESET,
    STATE_ERROR,
    STATE_LEADER,
    Event,
    Status,
)
from .watch import Observe, Watch

DEFAULT_TTL = 10.0
DEFAULT_ERROR_TIMEOUT = 10.0
MAX_RETRY_DELAY = 30.0
"""The cap of the back-off of a candidate whose campaigns fail. A candidate
that holds a candidacy retries at least every TTL/3, so that a short outage
does not cost it its place in line."""
LEADER_RETRY_FLOOR = 0.1
"""The shortest wait between a leader's tries."""

OnStarted = Callable[[Leadership], None]
OnStopped = Callable[[int, str], None]


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


class _Request:
    def __init__(self, kind: str, reason: str = "", from_callback: bool = False) -> None:
        self.kind = kind
        self.reason = reason
        self.from_callback = from_callback
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class _Dispatcher:
    """Calls the leadership callbacks one after the other, in the order
    they were queued, without ever blocking the loop: on_stopped_leading of
    a term runs after its on_started_leading has returned, and before the
    next on_started_leading."""

    def __init__(self, name: str, log: logging.Logger) -> None:
        self._cond = threading.Condition()
        self._queue: Deque[Callable[[], None]] = collections.deque()
        self._closed = False
        self._log = log
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def push(self, f: Callable[[], None]) -> None:
        with self._cond:
            self._queue.append(f)
            self._cond.notify()

    def drained(self, timeout: float) -> bool:
        """Waits until every callback queued so far has returned; False if
        ``timeout`` seconds pass first."""
        done = threading.Event()
        self.push(done.set)
        return done.wait(max(timeout, 0.0))

    def close(self) -> None:
        """Waits for the queued callbacks to return and stops."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        if threading.current_thread() is not self.thread:
            self.thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                f = self._queue.popleft()
            try:
                f()
            except Exception:
                self._log.exception("elector: a leadership callback raised")


class Candidacy:
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
        with self._cond:
            if not self.running or self._stopping:
                raise NotRunningError("elector: the candidacy is not running")
            self._requests.append(r)
            self._cond.notify_all()
        if threading.current_thread() is self._loop_thread:
            raise ElectorError("elector: called from the candidacy's own loop")  # pragma: no cover
        if not r.done.wait(timeout):
            raise ElectorError("elector: no answer within %gs" % timeout)
        if r.error is not None:
            raise r.error

    def _poke(self) -> None:
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    # The loop. It owns the candidacy's state; report_error and handover
    # are requests it serves between heartbeats, so that no heartbeat
    # answer from before a request is acted on after it.

    def _now(self) -> float:
        return self._clock()

    def _interval(self) -> float:
        return self.ttl / 3

    def _retry_base(self) -> float:
        return min(self._interval(), max(self.ttl / 10, 0.1))

    def _step_down_at(self) -> float:
        # TTL minus the margin after the last successful heartbeat was
        # sent. The gateway counts the TTL from when it received that
        # heartbeat, which is later, so the leader stops before the
        # gateway can promote anyone else.
        return self._sent_ok + self.ttl - step_down_margin(self.ttl)

    def _run(self) -> None:
        err: Optional[BaseException] = None
        try:
            self._loop()
        except ProblemError as e:
            err = e
        except Exception as e:  # a bug: stop as cleanly as on close
            self._log.exception("elector: the candidacy's loop failed")
            err = e
        was_leading = self._leading
        with self._cond:
            self._stopping = True  # also when the loop stopped by itself
            self._cond.notify_all()
        self._stop_stream()
        self._lose(REASON_RESIGNED)
        with self._cond:
            resign = self._close_resign
            waits = self._close_waits
        if resign is None:
            resign = not self.keep_on_exit
        assert self._callbacks is not None
        if was_leading and waits and resign and self._token:
            # Let the leader's work stop before the next leader starts, but
            # never past the step-down deadline: after it the gateway may
            # promote the next one by itself.
            if not self._callbacks.drained(self._step_down_at() - self._now()):
                self._log.warning("elector: on_started_leading did not return by the step-down deadline; resigning")
        if resign:
            self._resign(final=True)
        self._callbacks.close()
        if self._watch_thread is not None:
            self._watch_thread.join()
        with self._cond:
            self._error = err
            pending, self._requests = self._requests, collections.deque()
            self._done.set()
            self._cond.notify_all()
        for r in pending:
            r.error = NotRunningError("elector: the candidacy stopped")
            r.done.set()
        self.client.close()

    def _loop(self) -> None:
        next_at = self._now()
        while True:
            wake = next_at
            if self._leading:
                wake = min(wake, self._step_down_at())
            with self._cond:
                while not (self._stopping or self._requests or self._poked):
                    left = wake - self._now()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._stopping:
                    return
                req = self._requests.popleft() if self._requests else None
                poked, self._poked = self._poked, False
            if req is not None:
                try:
                    self._serve(req)
                except BaseException as e:
                    req.error = e
                req.done.set()
                next_at = self._now()
                continue
            if poked:
                # The event stream says something happened to this
                # candidate: heartbeat now to hear what.
                next_at = self._now()
            self._check_step_down()
            if not self._now() < next_at:
                next_at = self._now() + self._step()
                self._check_step_down()

    def _check_step_down(self) -> None:
        """The step-down rule."""
        if not self._leading:
            return
        if self._now() >= self._step_down_at():
            self._log.warning(
                "elector: %s in %s: no successful heartbeat for TTL minus the margin; stepping down (term %d)",
                self.id, self.election, self._term,
            )
            self._lose(REASON_HEARTBEAT_TIMEOUT)
        elif self._current is not None and not self._current.active:
            self._lose(self._current.reason or REASON_HEARTBEAT_TIMEOUT)

    def _step(self) -> float:
        now = self._now()
        if not self._token and self._pause_until is not None and now < self._pause_until:
            return self._pause_until - now
        if not self._token:
            return self._campaign()
        return self._heartbeat()

    def _call_timeout(self) -> float:
        # A heartbeat period, and never past the step-down deadline of a
        # leader, so that the rule is applied on time.
        d = self._interval()
        if self._leading:
            d = min(d, self._step_down_at() - self._now())
        return max(d, 0.001)

    def _retry(self, what: str, err: BaseException) -> float:
        """Counts a failed request and returns the back-off before the
        next. A leader waits at most half the time left until its step-down
        deadline (and at least LEADER_RETRY_FLOOR), so that it tries again
        before the deadline if the gateways answer again in time."""
        self._failures += 1
        limit = MAX_RETRY_DELAY
        if self._token:
            limit = self._interval()
        if self._leading:
            limit = min(limit, max((self._step_down_at() - self._now()) / 2, LEADER_RETRY_FLOOR))
        retry_after = err.retry_after if isinstance(err, ProblemError) else 0.0
        d = retry_delay(self._retry_base(), limit, self._failures, retry_after, self._jitter())
        if not self._stopping:
            level = logging.WARNING if self._failures == 1 else logging.DEBUG
            self._log.log(
                level, "elector: %s in %s: %s failed; retrying with back-off in %.3fs (failures %d): %s",
                self.id, self.election, what, d, self._failures, err,
            )
        return d

    def _answered(self) -> None:
        if self._failures:
            self._log.info("elector: %s in %s: the gateway answers again after %d failures", self.id, self.election, self._failures)
            self._failures = 0

    def _campaign(self) -> float:
        sent = self._now()
        try:
            st = self.client.campaign(
                self.election, self.id, ttl=self.ttl, metadata=self.metadata, priority=self.priority,
                timeout=self._call_timeout(), abort=self._abort,
            )
        except CandidateExistsError as e:
            self._answered()
            self._log.warning(
                "elector: %s in %s: a candidacy with this id is still alive (a previous run?); "
                "campaigning again when it expires: %s", self.id, self.election, e,
            )
            return self._interval()
        except (InvalidRequestError, UnauthenticatedError, ForbiddenError) as e:
            self._log.error("elector: %s in %s: the gateway refuses the campaign: %s", self.id, self.election, e)
            raise
        except ElectorError as e:
            return self._retry("campaign", e)
        self._answered()
        self._token = st.token or ""
        self._succeeded(sent)
        self._log.info("elector: %s in %s: campaigned (%s, position %d)", self.id, self.election, st.state, st.position)
        if self._on_campaigned is not None:
            try:
                self._on_campaigned(st)
            except Exception:
                self._log.exception("elector: on_campaigned raised")
        self._observe(st)
        return self._interval()

    def _heartbeat(self) -> float:
        sent = self._now()
        try:
            st = self.client.heartbeat(
                self.election, self.id, self._token, timeout=self._call_timeout(), abort=self._abort
            )
        except (CandidateNotFoundError, TokenMismatchError, ElectionNotFoundError) as e:
            self._answered()
            self._log.warning(
                "elector: %s in %s: candidacy lost (expired or resigned elsewhere); campaigning again: %s",
                self.id, self.election, e,
            )
            self._token = ""
            self._lose(REASON_EXPIRED)
            self._publish(Standing(reason=REASON_EXPIRED))
            return 0.0
        except TransferPendingError:
            # Asked to hand over: the gateway no longer extends this
            # candidacy's life, so stop acting at once, whatever comes next.
            self._answered()
            if self._leading:
                self._log.info("elector: %s in %s: asked to hand over leadership; stopping", self.id, self.election)
                self._lose(REASON_TRANSFERRED)
            if self.explicit_handover:
                return self._interval()  # the caller stops its work, then calls handover
            try:
                self._handover(False)
            except (NoTransferPendingError, NotLeaderError):
                pass
            except ElectorError as e:
                return self._retry("handover", e)
            return 0.0
        except ElectorError as e:
            return self._retry("heartbeat", e)
        self._answered()
        self._succeeded(sent)
        self._observe(st)
        return self._interval()

    def _handover(self, from_callback: bool) -> None:
        """Ends a leadership the gateway asked this candidate to hand over.
        It first waits for the callbacks to return (so that the caller's
        work has stopped before the target starts), but never past the
        step-down deadline: after it the gateway may promote the target by
        itself, and a handover would add nothing."""
        self._lose(REASON_TRANSFERRED)
        assert self._callbacks is not None
        if not from_callback and not self._callbacks.drained(self._step_down_at() - self._now()):
            self._log.warning(
                "elector: %s in %s: the callbacks did not return by the step-down deadline; "
                "the transfer completes by the TTL instead", self.id, self.election,
            )
            return
        sent = self._now()
        st = self.client.handover(self.election, self.id, self._token, timeout=self._call_timeout(), abort=self._abort)
        self._log.info(
            "elector: %s in %s: handed over to %s (term %d)", self.id, self.election,
            st.leader.id if st.leader else "", st.term,
        )
        self._succeeded(sent)
        self._observe(st)

    def _succeeded(self, sent: float) -> None:
        self._sent_ok = sent
        with self._cond:
            self._last_ok = sent

    def _observe(self, st: Status) -> None:
        """Acts on a status from the gateway."""
        leader = st.leader.id if st.leader is not None else ""
        now = self._now()
        paused = self._pause_until is not None and now < self._pause_until
        if st.state == STATE_LEADER and paused:
            # The gateway's error cooldown ended before our error timeout:
            # hand over rather than lead.
            self._log.info("elector: %s in %s: promoted during the error timeout; resigning until it ends", self.id, self.election)
            self._resign()
            return
        if st.state == STATE_LEADER and now >= self._step_down_at():
            # The answer came too late to act on: the step-down deadline
            # it would set has passed. The next heartbeat decides.
            self._lose(REASON_HEARTBEAT_TIMEOUT)
        elif st.state == STATE_LEADER:
            if self._leading and self._term != st.term:
                # Another leadership than the one we act on: end it before
                # starting the one the gateway confirms.
                self._lose(REASON_LOST)
            elif self._leading and self._current is not None and not self._current.active:
                # The step-down rule ended this leadership (a pause
                # outlasted the deadline): end it, then start afresh on
                # the gateway's confirmation.
                self._lose(self._current.reason or REASON_HEARTBEAT_TIMEOUT)
            if self._leading and self._current is not None:
                # Safe to extend: the gateway has just confirmed this term,
                # and counts our TTL from after the request was sent.
                self._current.extend(self._step_down_at())
            else:
                self._start_leading(st.term)
        elif st.state == STATE_ERROR and not paused and self._pause_until is not None:
            # Our error timeout is over but the gateway's cooldown is not:
            # campaign again now, at the back of the line.
            self._log.info("elector: %s in %s: error timeout over; campaigning again", self.id, self.election)
            self._resign()
            self._pause_until = None
            return
        elif st.state == STATE_ERROR:
            self._lose(REASON_ERROR)
        else:
            self._lose(REASON_LOST)
        reason = REASON_ELECTED if self._leading else self.standing.reason
        self._publish(Standing(self._leading, st.state, st.term, leader, reason))

    def _start_leading(self, term: int) -> None:
        """Begins a leadership of ``term``. The gateway has just said this
        candidate leads, in answer to a request sent less than TTL minus
        the margin ago; the Leadership ends at that deadline unless a later
        heartbeat extends it, so it never outlives what the gateway
        granted."""
        self._leading, self._term = True, term
        l = Leadership(term, self._step_down_at(), clock=self._clock, name=self.id)

        def ended(_: Leadership) -> None:
            # Ended by the clock (its deadline is the loop's step-down
            # deadline): wake the loop, which then applies the rule.
            with self._cond:
                self._cond.notify_all()

        l.add_done_callback(ended)
        with self._cond:
            self._current = l
            self._cond.notify_all()
        self._log.info("elector: %s in %s: leading (term %d)", self.id, self.election, term)
        if self._on_started is not None:
            f = self._on_started
            assert self._callbacks is not None
            self._callbacks.push(lambda: f(l))
        self._publish(Standing(True, STATE_LEADER, term, self.id, REASON_ELECTED))

    def _lose(self, reason: str) -> None:
        """Ends the leadership, if any: the Leadership ends before anything
        else happens, then on_stopped_leading is queued and the standing
        published."""
        if not self._leading:
            return
        self._leading = False
        if self._current is not None:
            self._current.end(reason)
        self._log.info("elector: %s in %s: no longer leading (term %d): %s", self.id, self.election, self._term, reason)
        if self._on_stopped is not None:
            f, term = self._on_stopped, self._term
            assert self._callbacks is not None
            self._callbacks.push(lambda: f(term, reason))
        st = self.standing
        self._publish(dataclasses.replace(st, leading=False, reason=reason, leader="" if st.leader == self.id else st.leader))

    def _publish(self, st: Standing) -> None:
        with self._cond:
            self._standing = st
            self._cond.notify_all()

    def _resign(self, final: bool = False) -> Optional[BaseException]:
        """Ends the current candidacy; a failure is logged, and the
        candidacy then expires by its TTL."""
        if not self._token:
            return None
        err: Optional[BaseException] = None
        try:
            self.client.resign(
                self.election, self.id, self._token, timeout=max(self._interval(), 1.0),
                abort=None if final else self._abort,
            )
        except CandidateNotFoundError:
            pass
        except ElectorError as e:
            if not final and self._abort.cancelled:
                return e  # closing: the final resign tries again
            err = e
            self._log.warning("elector: %s in %s: resign failed; the candidacy will expire by its TTL: %s", self.id, self.election, e)
        self._token = ""
        self._publish(Standing(term=self.standing.term, reason=REASON_RESIGNED))
        return err

    def _serve(self, r: _Request) -> None:
        """Answers a report_error or handover request (raising its error)."""
        if r.kind == "handover":
            if not self._token:
                raise NoTransferPendingError(
                    409, type=PROBLEM_TYPE_PREFIX + "no-transfer-pending", title="No leadership transfer pending",
                    detail="the candidate holds no candidacy",
                )
            self._handover(r.from_callback)
            return
        self._lose(REASON_ERROR)
        self._pause_until = self._now() + self.error_timeout
        if not self._token:
            return
        try:
            st = self.client.report_error(
                self.election, self.id, self._token, r.reason, timeout=max(self._interval(), 1.0), abort=self._abort
            )
        except CandidateNotFoundError:
            self._token = ""
            return
        except ElectorError:
            # Without the report the gateway still sees a leader: give the
            # leadership up by resigning.
            self._resign()
            raise
        self._publish(Standing(False, st.state, st.term, st.leader.id if st.leader else "", REASON_ERROR))

    # The event stream: it only hastens heartbeats.

    def _gateway_changed(self, index: int) -> None:
        with self._cond:
            self._moved = True
        self._stop_stream()

    def _stop_stream(self) -> None:
        with self._cond:
            abort, stream = self._stream_abort, self._stream
        if abort is not None:
            abort.cancel()
        if stream is not None:
            stream.close()

    def _watch(self) -> None:
        """Follows the candidate's election through the gateway in use and
        pokes the loop when an event concerns this candidate, so that it
        heartbeats at once and learns from the answer: a follower the
        gateway has just promoted begins within a round trip, not at its
        next heartbeat. What the candidate does is decided by heartbeat
        answers alone, so a stale or forged event cannot make it lead."""
        failures = 0
        while True:
            abort = Abort()
            with self._cond:
                if self._stopping:
                    return
                self._moved = False
                self._stream_abort = abort
            w: Optional[Watch] = None
            try:
                w = Watch(
                    self.client.stream_connector(
                        self.election, gateway=self.client.gateway_index, timeout=max(self._interval(), 1.0)
                    ),
                    reconnect_delay=self.client.reconnect_delay, read_timeout=self.client.read_timeout,
                    logger=self._log, abort=abort,
                )
                with self._cond:
                    self._stream = w
                if abort.cancelled:
                    w.close()
                failures = 0
                for ev in w:
                    if self._concerns(ev):
                        self._poke()
            except ElectorError:
                if not abort.cancelled:
                    failures += 1
            finally:
                if w is not None:
                    w.close()
                with self._cond:
                    self._stream = None
                    moved = self._moved
            if moved:
                continue  # to the new gateway at once
            failures = max(failures, 1)
            wait = retry_delay(self._retry_base(), MAX_RETRY_DELAY, failures, 0.0, self._jitter())
            with self._cond:
                end = time.monotonic() + wait
                while not self._stopping and not self._moved:
                    left = end - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)

    def _concerns(self, ev: Event) -> bool:
        """Whether ev may change this candidate's standing."""
        if ev.type == EVENT_RESET:
            s = ev.snapshot
            return s is not None and s.leader is not None and s.leader.id == self.id
        d = ev.data
        if d is None:
            return False
        if ev.type in (EVENT_LEADER_BEGIN, EVENT_LEADER_END, EVENT_LEADER_ERROR, EVENT_CANDIDATE_LEFT):
            return d.candidate is not None and d.candidate.id == self.id
        if ev.type == EVENT_LEADER_TRANSFER:
            # Asked to hand over: the next heartbeat is refused and says so.
            return d.previous is not None and d.previous.id == self.id
        return False
