"""The thread that calls a Candidacy's leadership callbacks, and the
requests its loop serves."""

from __future__ import annotations

import collections
import logging
import threading
from typing import Callable, Deque, Optional


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
