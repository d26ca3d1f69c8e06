"""HTTP to one gateway, over http.client: kept-alive connections, an
overall deadline per request, and requests another thread can abort."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple
from urllib.parse import quote, urlencode, urlsplit

from .errors import InvalidConfigError, TransportError, problem_from_response

TOKEN_HEADER = "Elector-Candidate-Token"
SESSION_TOKEN_HEADER = "Elector-Session-Token"
MAX_ANSWER = 4 << 20  # the largest answer read (a delivery log is the biggest)
_IDLE_REUSE = 30.0  # a kept-alive connection idle longer is not reused (below servers' and balancers' idle timeouts)


class Abort:
    """Aborts requests in flight from another thread: ``cancel`` shuts down
    the sockets of the requests made with it, which then fail at once with
    a TransportError, as do the later ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: Set[socket.socket] = set()
        self.cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            socks, self._socks = self._socks, set()
        for s in socks:
            _shutdown(s)

    def attach(self, sock: Optional[socket.socket]) -> bool:
        """Registers sock; False when already cancelled."""
        if sock is None:
            return not self.cancelled
        with self._lock:
            if self.cancelled:
                return False
            self._socks.add(sock)
            return True

    def detach(self, sock: Optional[socket.socket]) -> None:
        with self._lock:
            self._socks.discard(sock)  # type: ignore[arg-type]


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Transport:
    """Requests to one gateway. Safe for concurrent use: each request takes
    a connection of its own from a small pool."""

    def __init__(
        self,
        base_url: str,
        *,
        api_token: Optional[str] = None,
        user_agent: str = "elector-client-python",
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        u = urlsplit(base_url.strip())
        if u.scheme not in ("http", "https") or not u.hostname:
            raise InvalidConfigError(
                "gateway %r is not an absolute http(s) URL such as http://127.0.0.1:8080" % base_url
            )
        self.base_url = base_url.strip().rstrip("/")
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port or (443 if self._https else 80)
        self._prefix = u.path.rstrip("/")
        self._api_token = api_token
        self._user_agent = user_agent
        self._ssl = ssl_context
        self._lock = threading.Lock()
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []

    def __repr__(self) -> str:
        return "Transport(%r)" % self.base_url

    def path(self, segments: Sequence[str], query: Optional[Dict[str, Any]] = None) -> str:
        p = self._prefix + "".join("/" + quote(s, safe="") for s in segments)
        q = {k: v for k, v in (query or {}).items() if v is not None}
        return p + ("?" + urlencode(q) if q else "")

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            ctx = self._ssl or ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=ctx
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        conn.connect()
        if conn.sock is not None and not self._https:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def _get(self) -> Optional[http.client.HTTPConnection]:
        """A kept-alive connection, or None."""
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since < _IDLE_REUSE:
                    return conn
                conn.close()
        return None

    def _put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < 4:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def headers(self, token: Optional[str], accept: str) -> Dict[str, str]:
        h = {"Accept": accept, "User-Agent": self._user_agent}
        if self._api_token:
            h["Authorization"] = "Bearer " + self._api_token
        if token:
            h[TOKEN_HEADER] = token
        return h

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        token: Optional[str] = None,
        timeout: float,
        abort: Optional[Abort] = None,
        content_type: str = "application/json",
        session_token: Optional[str] = None,
    ) -> Any:
        """Sends one request and returns the decoded JSON of a 2xx answer
        (None when it has no body). Raises the ProblemError of a non-2xx
        answer, or TransportError when no answer came before ``timeout``
        seconds passed or ``abort`` was cancelled. ``token`` goes in
        Elector-Candidate-Token, ``session_token`` in Elector-Session-Token."""
        deadline = time.monotonic() + timeout
        headers = self.headers(token, "application/json, application/problem+json")
        if session_token:
            headers[SESSION_TOKEN_HEADER] = session_token
        payload = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = content_type
        elif method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = "0"
        for attempt in (0, 1):
            conn = self._get() if attempt == 0 else None
            try:
                status, rheaders, data = self._roundtrip(conn, method, path, payload, headers, deadline, abort)
            except _Stale:
                # The gateway closed a kept-alive connection before it read
                # the request (its idle timeout): once more, on a fresh one.
                # Should it have read it after all (it died answering), a
                # second copy is harmless: heartbeat and resign are
                # idempotent, a second campaign is refused candidate-exists
                # (a Candidacy then waits for the first to expire), a second
                # transfer to the same target is accepted, a second handover
                # is refused not-leader.
                if attempt == 0:
                    continue
                raise TransportError("%s %s: connection closed" % (method, path), gateway=self.base_url) from None
            if status < 200 or status > 299:
                raise problem_from_response(
                    status, rheaders.get("Content-Type", ""), data, rheaders.get("Retry-After")
                )
            if not data:
                return None
            try:
                return json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise TransportError(
                    "%s %s: the answer is not JSON: %s" % (method, path, e), gateway=self.base_url
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _roundtrip(
        self,
        conn: Optional[http.client.HTTPConnection],
        method: str,
        path: str,
        payload: Optional[bytes],
        headers: Dict[str, str],
        deadline: float,
        abort: Optional[Abort],
    ) -> Tuple[int, Any, bytes]:
        reused = conn is not None
        sock = None
        try:
            if abort is not None and abort.cancelled:
                raise TransportError("request aborted", gateway=self.base_url)
            if conn is None:
                conn = self._connect(_remaining(deadline))
            sock = conn.sock
            if abort is not None and not abort.attach(sock):
                raise TransportError("request aborted", gateway=self.base_url)
            if sock is not None:
                sock.settimeout(_remaining(deadline))
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            if sock is not None:
                sock.settimeout(_remaining(deadline))
            data = resp.read(MAX_ANSWER)
            keep = not resp.will_close and resp.read(1) == b""
            status, rheaders = resp.status, resp.headers
        except TransportError:
            if conn is not None:
                conn.close()
            raise
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
            if conn is not None:
                conn.close()
            if reused and (abort is None or not abort.cancelled) and time.monotonic() < deadline:
                raise _Stale() from None
            raise self._error(method, path, e, deadline, abort) from None
        except (OSError, http.client.HTTPException, ValueError) as e:
            if conn is not None:
                conn.close()
            raise self._error(method, path, e, deadline, abort) from None
        finally:
            if abort is not None:
                abort.detach(sock)
        if keep:
            self._put(conn)
        else:
            conn.close()
        return status, rheaders, data

    def _error(self, method: str, path: str, e: BaseException, deadline: float, abort: Optional[Abort]) -> TransportError:
        if abort is not None and abort.cancelled:
            return TransportError("%s %s: aborted" % (method, path), gateway=self.base_url)
        timed_out = isinstance(e, socket.timeout) or time.monotonic() >= deadline
        what = "no answer before the deadline" if timed_out else "%s: %s" % (type(e).__name__, e)
        return TransportError("%s %s%s: %s" % (method, self.base_url, path, what), gateway=self.base_url, timed_out=timed_out)

    def open_stream(
        self, path: str, headers: Dict[str, str], *, timeout: float, abort: Optional[Abort] = None
    ) -> "Stream":
        """Opens an event stream: a GET whose answer is read as it comes.
        Raises the ProblemError of a non-200 answer, or TransportError."""
        deadline = time.monotonic() + timeout
        conn = None
        sock = None
        try:
            if abort is not None and abort.cancelled:
                raise TransportError("stream aborted", gateway=self.base_url)
            conn = self._connect(_remaining(deadline))
            sock = conn.sock
            if abort is not None and not abort.attach(sock):
                raise TransportError("stream aborted", gateway=self.base_url)
            h = self.headers(None, "text/event-stream")
            h.update(headers)
            conn.request("GET", path, headers=h)
            resp = conn.getresponse()
            if resp.status != 200:
                data = resp.read(64 << 10)
                raise problem_from_response(
                    resp.status, resp.headers.get("Content-Type", ""), data, resp.headers.get("Retry-After")
                )
        except TransportError:
            if conn is not None:
                conn.close()
            raise
        except (OSError, http.client.HTTPException, ValueError) as e:
            if conn is not None:
                conn.close()
            raise self._error("GET", path, e, deadline, abort) from None
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        finally:
            if abort is not None:
                abort.detach(sock)
        return Stream(conn, resp)


class _Stale(Exception):
    """A kept-alive connection the gateway had closed."""


def _remaining(deadline: float) -> float:
    r = deadline - time.monotonic()
    if r <= 0:
        raise socket.timeout("deadline passed")
    return r


class Stream:
    """The body of an event stream, read as it arrives. ``abort`` (from any
    thread) makes a blocked ``read`` return b"" at once."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._conn = conn
        self._resp = resp
        self._sock = conn.sock
        self._lock = threading.Lock()
        self._closed = False

    def read(self, timeout: float) -> bytes:
        """The next bytes of the stream; b"" at its end. Raises OSError (a
        socket.timeout when nothing came for ``timeout`` seconds) or
        http.client.HTTPException."""
        if self._sock is not None:
            self._sock.settimeout(timeout)
        return self._resp.read1(65536)

    def abort(self) -> None:
        with self._lock:
            if self._closed:
                return
        if self._sock is not None:
            _shutdown(self._sock)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        if self._sock is not None:
            _shutdown(self._sock)
        self._conn.close()
