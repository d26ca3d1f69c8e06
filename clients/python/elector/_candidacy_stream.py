"""The event stream of a Candidacy: it only hastens heartbeats."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Optional

from ._backoff import MAX_RETRY_DELAY, retry_delay
from ._http import Abort
from .errors import ElectorError
from .types import (
    EVENT_CANDIDATE_LEFT,
    EVENT_LEADER_BEGIN,
    EVENT_LEADER_END,
    EVENT_LEADER_ERROR,
    EVENT_LEADER_TRANSFER,
    EVENT_RESET,
    Event,
)
from .watch import Watch

if TYPE_CHECKING:
    from .candidacy import Candidacy

    _Base = Candidacy
else:
    _Base = object


class _Stream(_Base):
    """The event stream's half of Candidacy."""

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
