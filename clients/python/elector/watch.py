"""Following an election's events (Watch) and its leader (Observe) over
Server-Sent Events, resuming after a dropped connection."""

from __future__ import annotations

import collections
import http.client
import logging
import threading
from typing import Callable, Deque, Iterator, Optional

from ._http import Abort, Stream
from .errors import ElectorError, ProblemError, TransportError
from .sse import Message, SSEError, SSEParser
from .types import EVENT_LEADER_BEGIN, EVENT_LEADER_END, EVENT_RESET, Event, Leader

DEFAULT_RECONNECT_DELAY = 2.0
"""Seconds a watch waits before reconnecting until the stream's own
``retry:`` hint says otherwise."""
MAX_RECONNECT_DELAY = 30.0
"""The cap of a watch's back-off between failed reconnections."""
DEFAULT_READ_TIMEOUT = 60.0
"""Seconds without a byte after which a stream is taken for dead and
reopened. The gateway sends a comment every 15 s (``sse.keep_alive``) on an
idle stream; keep this well above its setting."""

Connect = Callable[[str, Abort], Stream]


class Watch:
    """The events of an election (or of all elections), as an iterator.

    The first connection is made by the constructor, whose errors (a
    ProblemError such as InvalidRequestError, or TransportError) are raised
    there. After that a dropped connection, or one silent for longer than
    ``read_timeout``, is reopened after the stream's ``retry:`` hint
    (doubling up to MAX_RECONNECT_DELAY while attempts fail), resuming
    after the last event id received, so that every event arrives once. A
    4xx answer (other than 429) to a reconnection ends the iteration by
    raising its ProblemError. ``close`` (from any thread, or leaving a
    ``with`` block) ends the iteration.

    ``last_event_id`` is the id to resume from; pass it to a later watch.
    Events whose payload does not decode are skipped.
    """

    def __init__(
        self,
        connect: Connect,
        last_event_id: str = "",
        *,
        reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        logger: Optional[logging.Logger] = None,
        abort: Optional[Abort] = None,
    ) -> None:
        self._connect_fn = connect
        self.last_event_id = last_event_id
        self._delay = reconnect_delay if reconnect_delay > 0 else DEFAULT_RECONNECT_DELAY
        self._read_timeout = read_timeout
        self._log = logger or logging.getLogger("elector")
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._abort = abort or Abort()
        self._pending: Deque[Message] = collections.deque()
        self._failures = 0
        self._reading = False
        self._stream: Optional[Stream] = None
        self._parser = SSEParser(last_event_id)
        self._stream = self._open()

    def _open(self) -> Stream:
        stream = self._connect_fn(self.last_event_id, self._abort)
        with self._lock:
            if self._closed.is_set():
                stream.close()
                raise TransportError("watch closed")
            self._stream = stream
        self._parser = SSEParser(self.last_event_id)
        return stream

    def close(self) -> None:
        """Ends the watch: a blocked iteration returns at once."""
        self._closed.set()
        self._abort.cancel()
        with self._lock:
            stream, self._stream = self._stream, None
            reading = self._reading
        if stream is None:
            return
        if reading:
            stream.abort()  # the reading thread wakes up and closes it
        else:
            stream.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        while True:
            while self._pending:
                msg = self._pending.popleft()
                # Move the cursor even past an event that does not decode,
                # so that a reconnection does not fetch it again forever.
                self.last_event_id = msg.id
                ev = _decode(msg)
                if ev is None:
                    self._log.warning("elector: skipping an event that does not decode: %.200s", msg.data)
                    continue
                return ev
            if self._closed.is_set():
                raise StopIteration
            stream = self._stream
            if stream is None:
                self._reconnect()
                continue
            with self._lock:
                self._reading = True
            try:
                chunk = stream.read(self._read_timeout)
                if chunk:
                    self._failures = 0
                    self._pending.extend(self._parser.feed(chunk))
                    if self._parser.retry is not None:
                        self._delay = self._parser.retry
                    continue
                err: Optional[BaseException] = None
            except (OSError, http.client.HTTPException, ValueError, SSEError, AttributeError) as e:
                err = e
            finally:
                with self._lock:
                    self._reading = False
            self._drop(stream)
            if self._closed.is_set():
                raise StopIteration
            self._log.debug("elector: event stream dropped (%s); reconnecting after %s", err, self.last_event_id or "the start")

    def _drop(self, stream: Stream) -> None:
        with self._lock:
            if self._stream is stream:
                self._stream = None
        stream.close()

    def _reconnect(self) -> None:
        wait = self._delay * (2 ** min(self._failures, 5))
        wait = min(wait, max(MAX_RECONNECT_DELAY, self._delay))
        if self._closed.wait(wait):
            return
        try:
            self._open()
        except ProblemError as e:
            if 400 <= e.status < 500 and e.status != 429:
                self._log.warning("elector: event stream refused; the watch ends: %s", e)
                self.close()
                raise
            self._failures += 1
        except ElectorError:
            self._failures += 1


def _decode(msg: Message) -> Optional[Event]:
    import json

    try:
        payload = json.loads(msg.data)
        if not isinstance(payload, dict):
            return None
        return Event.from_json(msg.id if msg.has_id else "", msg.event, payload)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def leader_of(ev: Event) -> Optional[Leader]:
    """The leader after ev, for the events that say (``id`` "" for none)."""
    if ev.type == EVENT_RESET:
        s = ev.snapshot
        if s is None:
            return None
        if s.leader is None:
            return Leader(id="", term=s.term, election=s.election)
        return Leader(
            id=s.leader.id, term=s.leader.term, metadata=s.leader.metadata, since=s.leader.since,
            expires_at=s.leader.expires_at, election=s.election, raw=s.leader.raw,
        )
    if ev.type == EVENT_LEADER_BEGIN and ev.data is not None:
        c = ev.data.candidate
        return Leader(
            id=c.id if c else "", term=ev.data.term, metadata=c.metadata if c else {}, since=ev.timestamp,
            election=ev.data.election,
        )
    if ev.type == EVENT_LEADER_END and ev.data is not None:
        return Leader(id="", term=ev.data.term, election=ev.data.election)
    return None


class Observe:
    """Who leads an election, as an iterator of Leader values, as etcd's
    Election.Observe, but also saying when nobody leads: first the current
    leader, then every change; a Leader whose ``id`` is ``""`` means no
    leader (its ``term`` is then the last leadership's). Between two
    leaders there is always a "no leader". Built on a Watch, it resumes
    after a dropped connection; ``close`` ends it."""

    def __init__(self, watch: Watch, election: str) -> None:
        self._watch = watch
        self._election = election
        self._last: Optional[Leader] = None

    def close(self) -> None:
        self._watch.close()

    def __enter__(self) -> "Observe":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[Leader]:
        return self

    def __next__(self) -> Leader:
        for ev in self._watch:
            l = leader_of(ev)
            if l is None:
                continue
            l.election = self._election
            if self._last is not None and l.id == self._last.id and l.term == self._last.term:
                continue
            self._last = l
            return l
        raise StopIteration
