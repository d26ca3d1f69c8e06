#!/usr/bin/env python3
"""The Python driver of the client conformance suite.

It speaks clients/conformance/PROTOCOL.md over standard input and output:
one JSON command per line in, one reply per command and reports of what
the client does out. It knows nothing of the scenarios. Run it from the
repository root as ``python3 clients/python/conformance_driver.py``;
diagnostics go to standard error.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import elector  # noqa: E402
from elector import webhooks  # noqa: E402

log = logging.getLogger("elector.driver")


class DriverError(Exception):
    """A command the driver cannot understand or carry out."""


def now_ms() -> float:
    return time.time() * 1000.0


class Driver:
    def __init__(self, out: Any) -> None:
        self._out = out
        self._write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._candidacies: Dict[str, elector.Candidacy] = {}
        self._keepers: Dict[str, "_Keeper"] = {}
        self._streams: Dict[str, Any] = {}
        self._stream_threads: Dict[str, threading.Thread] = {}
        self._workers: List[threading.Thread] = []

    # Output: one write per line, under a lock.

    def write(self, obj: Dict[str, Any]) -> None:
        line = json.dumps(obj, separators=(",", ":"), default=str) + "\n"
        with self._write_lock:
            self._out.write(line)
            self._out.flush()

    def report(self, event: str, **fields: Any) -> None:
        fields["event"] = event
        self.write(fields)

    # Commands.

    def handle_line(self, line: str) -> bool:
        """Starts the command of line; False after exit."""
        try:
            cmd = json.loads(line)
        except ValueError as e:
            self.report("log", message="a line that is not JSON: %s" % e)
            return True
        if not isinstance(cmd, dict):
            self.report("log", message="a line that is not a JSON object")
            return True
        ref = cmd.get("ref")
        if cmd.get("cmd") == "exit":
            self._run(ref, cmd)  # here, so that nothing is read after it
            return False
        t = threading.Thread(target=self._run, args=(ref, cmd), daemon=True)
        with self._lock:
            self._workers.append(t)
        t.start()
        return True

    def _run(self, ref: Any, cmd: Dict[str, Any]) -> None:
        name = cmd.get("cmd")
        try:
            handler: Optional[Callable[[Dict[str, Any]], Any]] = getattr(self, "cmd_" + str(name), None)
            if handler is None:
                raise DriverError("unknown command %s" % json.dumps(name))
            result = handler(cmd)
            self.write({"ref": ref, "ok": True, "result": result if result is not None else {}})
            if name in ("watch", "observe"):
                self._start_stream(cmd["name"])  # its reports come after the reply
        except Exception as e:  # every failure becomes a reply
            self.write({"ref": ref, "ok": False, "error": error_of(e)})

    def cmd_start(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")

        def started(l: elector.Leadership) -> None:
            self.report("leading", name=name, term=l.term, at_ms=now_ms())
            l.add_done_callback(
                lambda l: self.report("stopped", name=name, term=l.term, reason=l.reason, at_ms=now_ms())
            )

        cand = elector.Candidacy(
            gateways(c), required(c, "election"), required(c, "candidate"),
            ttl=float(required(c, "ttl_ms")) / 1000.0,
            metadata=c.get("metadata"),
            priority=int(c.get("priority") or 0),
            api_token=c.get("api_token") or None,
            on_started_leading=started,
            on_campaigned=lambda st: self.report("campaigned", name=name, at_ms=now_ms()),
        )
        with self._lock:
            if name in self._candidacies:
                raise DriverError("a candidacy named %r exists" % name)
            self._candidacies[name] = cand
        cand.start()
        return {"margin_ms": cand.margin * 1000.0}

    def cmd_close(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        with self._lock:
            keeper = self._keepers.pop(name, None)
            cand = self._candidacies.pop(name, None) if keeper is None else None
        if keeper is not None:
            keeper.close()
            return {}
        if cand is None:
            raise DriverError("no candidacy named %r" % name)
        cand.close()
        return {}

    def cmd_keep_session(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        client = elector.Client(gateways(c)[0], api_token=c.get("api_token") or None)
        k = _Keeper(self, name, elector.keep_session(client, float(required(c, "ttl_ms")) / 1000.0))
        with self._lock:
            if name in self._keepers:
                k.close()
                raise DriverError("a keeper named %r exists" % name)
            self._keepers[name] = k
        k.follow()
        return {"session": k.keeper.id, "token": k.keeper.token, "margin_ms": elector.step_down_margin(k.keeper.ttl) * 1000.0}

    def cmd_keeper_campaign(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        with self._lock:
            k = self._keepers.get(name)
        if k is None:
            raise DriverError("no keeper named %r" % name)
        return k.campaign(required(c, "lead"), required(c, "election"), required(c, "candidate"))

    def cmd_report_error(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        with self._lock:
            cand = self._candidacies.get(name)
        if cand is None:
            raise DriverError("no candidacy named %r" % name)
        cand.report_error(c.get("reason") or "")
        return {}

    def cmd_watch(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        client = elector.Client(gateways(c), api_token=c.get("api_token") or None)
        w = client.watch(required(c, "election"), c.get("last_event_id") or "")

        def follow() -> None:
            try:
                for ev in w:
                    fields: Dict[str, Any] = {"name": name, "id": ev.id, "type": ev.type, "at_ms": now_ms()}
                    if ev.snapshot is not None:
                        fields["term"] = ev.snapshot.term
                        fields["candidate"] = ev.snapshot.leader.id if ev.snapshot.leader else ""
                    elif ev.data is not None:
                        fields["term"] = ev.data.term
                        fields["candidate"] = ev.data.candidate.id if ev.data.candidate else ""
                        fields["reason"] = ev.data.reason
                    self.report("observed", **fields)
            except elector.ElectorError as e:
                self.report("log", message="watch %s ended: %s" % (name, e))

        self._add_stream(name, w, follow)
        return {}

    def cmd_observe(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        client = elector.Client(gateways(c), api_token=c.get("api_token") or None)
        o = client.observe(required(c, "election"))

        def follow() -> None:
            try:
                for l in o:
                    self.report("leader", name=name, leader=l.id, term=l.term, at_ms=now_ms())
            except elector.ElectorError as e:
                self.report("log", message="observe %s ended: %s" % (name, e))

        self._add_stream(name, o, follow)
        return {}

    def _add_stream(self, name: str, stream: Any, follow: Callable[[], None]) -> None:
        t = threading.Thread(target=follow, daemon=True, name="driver-" + name)
        with self._lock:
            if name in self._streams:
                stream.close()
                raise DriverError("a watch named %r exists" % name)
            self._streams[name] = stream
            self._stream_threads[name] = t

    def _start_stream(self, name: str) -> None:
        with self._lock:
            t = self._stream_threads.get(name)
        if t is not None:
            t.start()

    def cmd_stop(self, c: Dict[str, Any]) -> Dict[str, Any]:
        name = required(c, "name")
        with self._lock:
            stream = self._streams.pop(name, None)
            t = self._stream_threads.pop(name, None)
        if stream is None:
            raise DriverError("no watch named %r" % name)
        stream.close()
        if t is not None and t.ident is not None:
            t.join(10)
        return {}

    def cmd_call(self, c: Dict[str, Any]) -> Any:
        op = required(c, "op")
        args = c.get("args") or {}
        token = c.get("token") or ""
        client = elector.Client(gateways(c), api_token=c.get("api_token") or None)
        try:
            return call(client, op, args, token)
        finally:
            client.close()

    def cmd_verify_webhook(self, c: Dict[str, Any]) -> Dict[str, Any]:
        headers = c.get("headers") or {}
        body = c.get("body") or ""
        try:
            event = webhooks.verify(required(c, "secret"), headers, body)
        except (webhooks.WebhookVerificationError, ValueError) as e:
            return {"valid": False, "message": str(e)}
        return {"valid": True, "event": event}

    def cmd_exit(self, c: Dict[str, Any]) -> Dict[str, Any]:
        self.close_all()
        return {}

    def close_all(self) -> None:
        with self._lock:
            cands = list(self._candidacies.values())
            keepers = list(self._keepers.values())
            streams = list(self._streams.values())
            threads = list(self._stream_threads.values())
            self._candidacies.clear()
            self._keepers.clear()
            self._streams.clear()
            self._stream_threads.clear()
        for s in streams:
            s.close()
        closers = [threading.Thread(target=x.close, daemon=True) for x in cands + keepers]
        for t in closers:
            t.start()
        for t in closers + [t for t in threads if t.ident is not None]:
            t.join(30)

    def serve(self, stdin: Any) -> None:
        for line in stdin:
            line = line.strip()
            if line and not self.handle_line(line):
                break
        else:
            # Standard input closed: close everything, as exit does.
            self.close_all()
        with self._lock:
            workers = list(self._workers)
        for t in workers:
            t.join(30)


class _Keeper:
    """A running SessionKeeper and the reports of its leads: "leading" once
    a lead is given, "stopped" (with its reason) when it is lost, and
    "session_ended" when the keeper ends without being closed."""

    def __init__(self, driver: Driver, name: str, keeper: elector.SessionKeeper) -> None:
        self.driver = driver
        self.name = name
        self.keeper = keeper
        self._closing = threading.Event()
        self._threads: List[threading.Thread] = []

    def _thread(self, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, daemon=True)
        self._threads.append(t)
        t.start()

    def follow(self) -> None:
        def ended() -> None:
            self.keeper.done.wait()
            if not self._closing.is_set():
                self.driver.report("session_ended", name=self.name, error=error_of(self.keeper.error), at_ms=now_ms())

        self._thread(ended)

    def campaign(self, lead_name: str, election: str, candidate: str) -> Any:
        st, sent = self.keeper.campaign(election, candidate)
        if st.state == "leader":
            lead = self.keeper.lead(election, st.term, sent)
            self.driver.report("leading", name=lead_name, term=st.term, at_ms=now_ms())

            def stopped() -> None:
                lead.wait()
                self.driver.report("stopped", name=lead_name, term=st.term, reason=lead.reason, at_ms=now_ms())

            self._thread(stopped)
        return st.raw

    def close(self) -> None:
        """Closes the session, and returns once every lead's stopped report
        is written."""
        self._closing.set()
        self.keeper.close()
        for t in self._threads:
            t.join(30)


def required(c: Dict[str, Any], key: str) -> Any:
    v = c.get(key)
    if v is None or v == "":
        raise DriverError("%s needs %r" % (c.get("cmd") or "the command", key))
    return v


def gateways(c: Dict[str, Any]) -> List[str]:
    g = c.get("gateways")
    if isinstance(g, str):
        return [g]
    if not isinstance(g, list) or not g:
        raise DriverError("%s needs 'gateways', a list of URLs" % c.get("cmd"))
    return [str(u) for u in g]


def _duration(v: Any) -> Optional[float]:
    if v is None or v == "":
        return None
    return elector.parse_duration(v)


def call(client: elector.Client, op: str, a: Dict[str, Any], token: str) -> Any:
    """One plain call; the answer as the API's JSON."""
    if op == "campaign":
        return client.campaign(
            required(a, "election"), required(a, "id"), ttl=_duration(a.get("ttl")), metadata=a.get("metadata"),
            priority=a.get("priority"), session=a.get("session") or None, session_token=token or None,
        ).raw
    if op == "open_session":
        return client.open_session(_duration(a.get("ttl"))).raw
    if op == "heartbeat_session":
        return client.heartbeat_session(required(a, "session"), token).raw
    if op == "close_session":
        client.close_session(required(a, "session"), token)
        return {}
    if op == "heartbeat":
        return client.heartbeat(required(a, "election"), required(a, "id"), token).raw
    if op == "resign":
        client.resign(required(a, "election"), required(a, "id"), token)
        return {}
    if op == "report_error":
        return client.report_error(required(a, "election"), required(a, "id"), token, a.get("reason")).raw
    if op == "leader":
        return client.leader(required(a, "election")).raw
    if op == "candidates":
        return client.candidates(required(a, "election")).raw
    if op == "election":
        return client.election(required(a, "election")).raw
    if op == "transfer":
        return client.transfer(required(a, "election"), required(a, "to"), token or None).raw
    if op == "handover":
        return client.handover(required(a, "election"), required(a, "id"), token).raw
    raise DriverError("unknown op %s" % json.dumps(op))


def error_of(e: BaseException) -> Dict[str, Any]:
    if isinstance(e, elector.ProblemError):
        return {"kind": "problem", "type": e.type, "status": e.status, "class": type(e).__name__, "message": str(e)}
    if isinstance(e, elector.TransportError):
        return {"kind": "transport", "message": str(e)}
    if isinstance(e, DriverError):
        return {"kind": "driver", "message": str(e)}
    return {"kind": "driver", "message": "%s: %s" % (type(e).__name__, e)}


def main() -> int:
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("ELECTOR_DRIVER_LOG", "INFO").upper(),
        format="%(asctime)s python-driver %(levelname)s %(message)s",
    )
    Driver(sys.stdout).serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
