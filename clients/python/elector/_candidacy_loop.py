"""The loop of a Candidacy: it owns the candidacy's state. report_error and
handover are requests it serves between heartbeats, so that no heartbeat
answer from before a request is acted on after it."""

from __future__ import annotations

import collections
import dataclasses
import logging
from typing import TYPE_CHECKING, Optional

from ._backoff import LEADER_RETRY_FLOOR, MAX_RETRY_DELAY, retry_delay, step_down_margin
from ._dispatch import _Request
from .errors import (
    PROBLEM_TYPE_PREFIX,
    CandidateExistsError,
    CandidateNotFoundError,
    ElectionNotFoundError,
    ElectorError,
    ForbiddenError,
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
    Standing,
)
from .types import STATE_ERROR, STATE_LEADER, Status

if TYPE_CHECKING:
    from .candidacy import Candidacy

    _Base = Candidacy
else:
    _Base = object


class _Loop(_Base):
    """The loop's half of Candidacy."""

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
                # The wait counts from the answer, not from before the
                # request: a Retry-After is relative to when it was sent.
                wait = self._step()
                next_at = self._now() + wait
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
        with self._cond:
            if self._stopping:
                return  # closing: an answer that arrived meanwhile starts nothing
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
