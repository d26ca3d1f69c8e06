"""A session that keeps itself alive, and the step-down rule for its
leaders: what the Go client's KeepSession and Lead do."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Optional, Set, Tuple

from ._backoff import step_down_margin
from .candidacy import DEFAULT_TTL
from .client import Client
from .errors import SessionNotFoundError, SessionTokenMismatchError, SessionTokenMissingError
from .types import Session, Status

log = logging.getLogger("elector")


class SessionLead:
    """The leadership of one of a kept session's candidacies, as
    :meth:`SessionKeeper.lead` gives it: act as leader only while
    :meth:`leading` says so. ``lost`` is set, and ``reason`` says why, at
    the step-down deadline unless a heartbeat of the session renews the
    candidacy, as soon as an answer no longer shows it leading with
    ``term``, and when the keeper ends. :meth:`leading` also looks at the
    clock itself, so a process paused past the deadline sees it over at its
    first look."""

    def __init__(self, keeper: "SessionKeeper", election: str, term: int, since: float, deadline: float) -> None:
        self.election = election
        self.term = term
        self.lost = threading.Event()
        self.reason: Optional[str] = None
        self._keeper = keeper
        self._since = since
        self._deadline = deadline
        self._timer: Optional[threading.Timer] = None
        self._armed = 0.0  # the deadline the timer was set for

    @property
    def deadline(self) -> float:
        """The step-down deadline, on ``time.monotonic()``'s clock."""
        with self._keeper._lock:
            return self._deadline

    def leading(self) -> bool:
        """Whether to act as the leader now."""
        with self._keeper._lock:
            if not self.lost.is_set() and time.monotonic() >= self._deadline:
                self._end_locked("no heartbeat of the session got through before the step-down deadline")
            return not self.lost.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the leadership is lost (True) or timeout passes."""
        return self.lost.wait(timeout)

    def cancel(self) -> None:
        """Stops following the leadership; it reads as lost from then on."""
        with self._keeper._lock:
            self._end_locked("cancelled")

    # Under the keeper's lock.

    def _apply_locked(self, s: Session, sent: float) -> None:
        if s.candidate(self.election) is None and sent < self._since:
            return  # perhaps answered before the campaign
        deadline = s.step_down_deadline(self.election, self.term, sent)
        if deadline is None:
            self._end_locked("the session's candidacy in %s no longer leads with term %d" % (self.election, self.term))
            return
        self._deadline = deadline
        self._arm_locked()

    def _arm_locked(self) -> None:
        """Sets the timer for the deadline, unless it is set for an earlier
        time already: _expire then sets it again for a later deadline."""
        if self._timer is not None and self._armed <= self._deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._armed = self._deadline
        self._timer = threading.Timer(max(0.0, self._deadline - time.monotonic()), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._keeper._lock:
            if self.lost.is_set():
                return
            if time.monotonic() < self._deadline:
                self._timer = None
                self._arm_locked()
                return
            self._end_locked("no heartbeat of the session got through before the step-down deadline")

    def _end_locked(self, reason: str) -> None:
        if self.lost.is_set():
            return
        self.reason = reason
        self.lost.set()
        if self._timer is not None:
            self._timer.cancel()
        self._keeper._leads.discard(self)


class SessionKeeper:
    """A session that keeps itself alive, as etcd's concurrency.Session
    keeps its lease alive: it opens a session on ``client`` whose
    candidacies live ``ttl`` seconds without a heartbeat (DEFAULT_TTL when
    None), and heartbeats it every TTL/3 in a thread of its own (sooner
    again after a failure) until :meth:`stop` or :meth:`close`, or until the
    gateway answers that the session is gone (it expired while no heartbeat
    got through, or was closed elsewhere). :meth:`campaign` puts a
    candidacy in it; :meth:`lead` gives a leader its :class:`SessionLead`.
    Leaving a ``with`` block closes the session, resigning every candidacy.

    Raises what :meth:`Client.open_session` raises."""

    def __init__(self, client: Client, ttl: Optional[float] = None) -> None:
        self._client = client
        sent = time.monotonic()
        s = client.open_session(ttl if ttl is not None else DEFAULT_TTL)
        self.id = s.id
        self.token = s.token or ""
        self.ttl = s.ttl
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._last: Session = s
        self._sent = sent
        self._answers = 0
        self._leads: Set[SessionLead] = set()
        self.done = threading.Event()
        self.error: Optional[BaseException] = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="elector-session-" + self.id, daemon=True)
        self._thread.start()

    def __enter__(self) -> "SessionKeeper":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def last(self) -> Tuple[Session, float]:
        """The answer of the last heartbeat that got through (the session
        as opened before the first) and when it was sent, on
        ``time.monotonic()``'s clock: a candidacy it shows leading with a
        term may act as leader under ``lead(election, term, sent)``."""
        with self._lock:
            return self._last, self._sent

    def wait_answers(self, n: int = 1, timeout: Optional[float] = None) -> bool:
        """Blocks until n more heartbeats were answered (True), the keeper
        ended, or timeout passes (False)."""
        with self._lock:
            want = self._answers + n
            self._changed.wait_for(lambda: self._answers >= want or self.done.is_set(), timeout)
            return self._answers >= want

    def campaign(self, election: str, id: str, **kwargs: Any) -> Tuple[Status, float]:
        """Campaigns ``id`` in ``election`` in the session (as
        :meth:`Client.campaign`, with the session and its token; no ``ttl``:
        a session's candidacies live by its TTL), and returns the status
        with when the request was sent: a leader follows
        ``lead(election, status.term, sent)``."""
        kwargs.pop("ttl", None)
        sent = time.monotonic()
        st = self._client.campaign(election, id, session=self.id, session_token=self.token, **kwargs)
        return st, sent

    def lead(self, election: str, term: int, sent: float) -> SessionLead:
        """The leadership of the session's candidacy in ``election`` with
        ``term``, given that the answer to a request sent at ``sent``
        (``time.monotonic()``) showed it leading: its campaign, or a
        heartbeat of the session (:meth:`last`). Its step-down deadline is
        that of the newest answer that names the candidacy, and before any,
        the last renewal's (when the last heartbeat that got through, or the
        opening, was sent, plus the TTL, minus the margin): a campaign does
        not move a session's expiry. An answer that does not show it leading
        with ``term`` ends it, but for one to a heartbeat sent before
        ``sent`` that does not name it, which the gateway may have answered
        before the campaign."""
        with self._lock:
            lead = SessionLead(self, election, term, sent, self._sent + self.ttl - step_down_margin(self.ttl))
            if self.done.is_set():
                lead._end_locked("the session ended: %s" % (self.error,))
                return lead
            self._leads.add(lead)
            lead._apply_locked(self._last, self._sent)
            if not lead.lost.is_set():
                lead._arm_locked()  # if the answer did not
            return lead

    def _run(self) -> None:
        interval, retry = self.ttl / 3, min(self.ttl / 10, 1.0)
        wait = interval
        while not self._stopping.wait(wait):
            sent = time.monotonic()
            try:
                s = self._client.heartbeat_session(self.id, self.token, timeout=interval)
            except (SessionNotFoundError, SessionTokenMismatchError, SessionTokenMissingError) as e:
                log.warning("elector: session %s ended: %s", self.id, e)
                self._end(e)
                return
            except Exception as e:  # noqa: BLE001  (any failure: try again soon)
                log.warning("elector: session %s: heartbeat failed: %s", self.id, e)
                wait = retry
                continue
            self._answered(s, sent)
            wait = max(0.0, sent + interval - time.monotonic())
        self._end(None)

    def _answered(self, s: Session, sent: float) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self._last, self._sent = s, sent
            self._answers += 1
            for lead in list(self._leads):
                lead._apply_locked(s, sent)
            self._changed.notify_all()

    def _end(self, error: Optional[BaseException]) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self.error = error
            for lead in list(self._leads):
                lead._end_locked("the session ended: %s" % (error or "stopped",))
            self.done.set()
            self._changed.notify_all()

    def stop(self) -> None:
        """Stops the heartbeats and every lead; the session expires after
        its TTL."""
        self._stopping.set()
        self._thread.join()
        self._end(None)

    def close(self) -> None:
        """Stops the heartbeats and every lead, then closes the session:
        each of its candidacies resigns, a leader handing over at once. A
        session already gone is not an error."""
        self._end(None)
        self.stop()
        try:
            self._client.close_session(self.id, self.token)
        except SessionNotFoundError:
            pass


def keep_session(client: Client, ttl: Optional[float] = None) -> SessionKeeper:
    """Opens a session on ``client`` and keeps it alive: a
    :class:`SessionKeeper`."""
    return SessionKeeper(client, ttl)

