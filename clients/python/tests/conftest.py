"""Fixtures: a real `elector serve` on loopback, and a TCP proxy in front
of it that tests can cut, stall or reset."""

from __future__ import annotations

import itertools
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
REPO = PACKAGE.parent.parent
sys.path.insert(0, str(PACKAGE))


def wait_until(what: str, cond: Callable[[], object], timeout: float = 10.0, every: float = 0.01) -> object:
    """Polls cond until it returns something true; fails the test after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail("timed out after %gs waiting for %s" % (timeout, what))
        time.sleep(every)


def wait_candidate_gone(client: object, election: str, candidate: str, timeout: float = 10.0) -> None:
    """Waits until the gateway answers that candidate of election is not
    found: its candidacy expired or ended."""
    import elector  # on sys.path from above

    def gone() -> bool:
        try:
            client.candidate(election, candidate)  # type: ignore[attr-defined]
        except elector.CandidateNotFoundError:
            return True
        return False

    wait_until("candidate %s of %s to be gone" % (candidate, election), gone, timeout)


@pytest.fixture(scope="session")
def elector_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The elector binary: $ELECTOR_BIN, or built once per session."""
    env = os.environ.get("ELECTOR_BIN")
    if env:
        return env
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain to build elector (set ELECTOR_BIN)")
    out = tmp_path_factory.mktemp("bin") / "elector"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/elector"], cwd=str(REPO), check=True)
    return str(out)


class Gateway:
    """One `elector serve` process with the embedded backend, returned once
    /readyz answers 200 (with ``ready`` False: once it listens)."""

    def __init__(self, binary: str, args: List[str], ready: bool = True) -> None:
        self.dir = tempfile.mkdtemp(prefix="elector-py-")
        self.log_path = os.path.join(self.dir, "serve.log")
        self._log = open(self.log_path, "wb")
        cmd = [
            binary, "serve", "--listen", "127.0.0.1:0", "--embedded-data-dir", os.path.join(self.dir, "data"),
            "--sse-retry", "100ms", "--webhooks-allow-private-networks",
        ] + args
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = ""
        deadline = time.monotonic() + 30
        while not self.url:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("elector serve did not start:\n" + self.log())
            m = re.search(r"listen=(127\.0\.0\.1:\d+)", self.log())
            if m:
                self.url = "http://" + m.group(1)
            else:
                time.sleep(0.02)
        while ready:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("elector serve not ready:\n" + self.log())
            time.sleep(0.02)
        host, port = self.url[len("http://"):].split(":")
        self.host, self.port = host, int(port)

    def log(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def gateway(elector_bin: str) -> Iterator[Gateway]:
    """A gateway shared by the tests of a session; each test uses
    elections of its own."""
    g = Gateway(elector_bin, [])
    yield g
    g.stop()


@pytest.fixture
def start_gateway(elector_bin: str) -> Iterator[Callable[..., Gateway]]:
    """Starts gateways with extra serve flags, stopped after the test."""
    started: List[Gateway] = []

    def start(*args: str) -> Gateway:
        g = Gateway(elector_bin, list(args))
        started.append(g)
        return g

    yield start
    for g in started:
        g.stop()


_names = itertools.count()


@pytest.fixture
def election(request: pytest.FixtureRequest) -> str:
    """An election name of this test's own."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    return "%s-%d-%d" % (base, os.getpid() % 10000, next(_names))


class Proxy:
    """A TCP proxy to a gateway. ``stall`` holds every byte in both
    directions, on the connections open and on new ones, as a stopped
    process or a network dropping packets does; ``cut`` closes every
    connection and refuses new ones (answering nothing); ``drop`` closes
    the connections open now, once."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.stall = threading.Event()
        self.cut = threading.Event()
        self._lock = threading.Lock()
        self._conns: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            if self.cut.is_set():
                c.close()
                continue
            try:
                up = socket.create_connection(self.target, timeout=5)
            except OSError:
                c.close()
                continue
            with self._lock:
                self._conns += [c, up]
            threading.Thread(target=self._pump, args=(c, up), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        socks = [a, b]
        try:
            while not self._closed:
                r, _, _ = select.select(socks, [], [], 0.05)
                if self.stall.is_set():
                    continue
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except (OSError, ValueError):  # closed by drop or close meanwhile
            pass
        finally:
            for s in socks:
                self._close(s)

    def _close(self, s: socket.socket) -> None:
        with self._lock:
            if s in self._conns:
                self._conns.remove(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def drop(self) -> None:
        with self._lock:
            conns = list(self._conns)
        for s in conns:
            self._close(s)

    def set_cut(self, on: bool) -> None:
        if on:
            self.cut.set()
            self.drop()
        else:
            self.cut.clear()

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.drop()


@pytest.fixture
def proxy() -> Iterator[Callable[[Gateway], Proxy]]:
    made: List[Proxy] = []

    def make(g: Gateway) -> Proxy:
        p = Proxy(g.host, g.port)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


class Journal:
    """What callbacks did, in order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.lines: List[str] = []

    def add(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def get(self) -> List[str]:
        with self._lock:
            return list(self.lines)

    def record(self) -> dict:
        """Callbacks for a Candidacy: "started <term>" when
        on_started_leading is called, "returned <term>" when it returns
        (after its leadership ended), "stopped <term> <reason>"."""

        def started(l: "object") -> None:
            self.add("started %d" % l.term)  # type: ignore[attr-defined]
            l.stopped.wait()  # type: ignore[attr-defined]
            self.add("returned %d" % l.term)  # type: ignore[attr-defined]

        def stopped(term: int, reason: str) -> None:
            self.add("stopped %d %s" % (term, reason))

        return {"on_started_leading": started, "on_stopped_leading": stopped}


@pytest.fixture
def journal() -> Journal:
    return Journal()


@pytest.fixture
def closing() -> Iterator[Callable[[object], object]]:
    """Registers candidacies and watches to close after the test."""
    things: List[object] = []

    def add(x: object) -> object:
        things.append(x)
        return x

    yield add
    for x in reversed(things):
        x.close()  # type: ignore[attr-defined]
