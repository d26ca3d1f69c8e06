"""The conformance driver speaks clients/conformance/PROTOCOL.md."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

import elector
from conftest import PACKAGE, REPO
from elector import webhooks


class Driver:
    def __init__(self) -> None:
        self.p = subprocess.Popen(
            [sys.executable, str(PACKAGE / "conformance_driver.py")], cwd=str(REPO),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.lines: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.seen: List[Dict[str, Any]] = []
        self.ref = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.p.stdout:  # type: ignore[union-attr]
            self.lines.put(json.loads(raw))  # every line is one JSON object

    def send(self, **cmd: Any) -> int:
        self.ref += 1
        cmd["ref"] = self.ref
        self.p.stdin.write((json.dumps(cmd) + "\n").encode())  # type: ignore[union-attr]
        self.p.stdin.flush()  # type: ignore[union-attr]
        return self.ref

    def next(self, pred, timeout: float = 15) -> Dict[str, Any]:
        for line in self.seen:
            if pred(line):
                self.seen.remove(line)
                return line
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            if pred(line):
                return line
            self.seen.append(line)

    def reply(self, ref: int) -> Dict[str, Any]:
        return self.next(lambda l: l.get("ref") == ref)

    def do(self, **cmd: Any) -> Dict[str, Any]:
        return self.reply(self.send(**cmd))

    def report(self, event: str, name: str) -> Dict[str, Any]:
        return self.next(lambda l: l.get("event") == event and l.get("name") == name)


@pytest.fixture
def driver():
    d = Driver()
    yield d
    if d.p.poll() is None:
        d.p.kill()
        d.p.wait()


def test_the_driver_reports_leadership_and_answers_every_command(driver, gateway, election):
    gw = [gateway.url]
    r = driver.do(cmd="start", name="a", gateways=gw, election=election, candidate="a", ttl_ms=3000)
    assert r == {"ref": r["ref"], "ok": True, "result": {"margin_ms": 500.0}}
    assert driver.report("campaigned", "a")["at_ms"] > 0
    leading = driver.report("leading", "a")
    assert leading["term"] == 1 and abs(leading["at_ms"] - time.time() * 1000) < 60000

    assert driver.do(cmd="watch", name="w", gateways=gw, election=election)["ok"]
    observed = driver.report("observed", "w")
    assert observed["type"] == "reset" and observed["id"] and observed["candidate"] == "a"
    assert driver.do(cmd="observe", name="o", gateways=gw, election=election)["ok"]
    assert (lambda l: (l["leader"], l["term"]))(driver.report("leader", "o")) == ("a", 1)

    r = driver.do(cmd="call", op="leader", gateways=gw, args={"election": election})
    assert r["ok"] and r["result"]["id"] == "a" and r["result"]["term"] == 1
    r = driver.do(cmd="call", op="campaign", gateways=gw, args={"election": election, "id": "b", "ttl": "30s"})
    assert r["ok"] and r["result"]["token"] and r["result"]["state"] == "follower"
    token_b = r["result"]["token"]
    r = driver.do(cmd="call", op="heartbeat", gateways=gw, args={"election": election, "id": "b"}, token="ect_wrong")
    assert r["error"] == {
        "kind": "problem", "type": "urn:elector:problem:candidate-token-mismatch", "status": 403,
        "class": "TokenMismatchError", "message": r["error"]["message"],
    }
    r = driver.do(cmd="call", op="leader", gateways=["http://127.0.0.1:1"], args={"election": election})
    assert r["error"]["kind"] == "transport"
    assert driver.do(cmd="call", op="nope", gateways=gw, args={})["error"]["kind"] == "driver"
    assert driver.do(cmd="bogus")["error"] == {"kind": "driver", "message": 'unknown command "bogus"'}

    # Closing hands over at once: the signal ends before the reply.
    ref = driver.send(cmd="close", name="a")
    stopped = driver.report("stopped", "a")
    assert (stopped["term"], stopped["reason"]) == (1, "resigned")
    assert driver.reply(ref)["ok"]
    assert driver.next(lambda l: l.get("event") == "observed" and l.get("type") == "leader.begin")["candidate"] == "b"
    r = driver.do(cmd="call", op="resign", gateways=gw, args={"election": election, "id": "b"}, token=token_b)
    assert r == {"ref": r["ref"], "ok": True, "result": {}}
    assert driver.do(cmd="stop", name="w")["ok"] and driver.do(cmd="stop", name="o")["ok"]
    assert driver.do(cmd="exit")["ok"]
    assert driver.p.wait(10) == 0


def test_the_driver_verifies_webhooks(driver):
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = '{"type":"leader.begin","data":{"election":"e","term":3}}'
    ts = int(time.time())
    headers = {"webhook-id": "7", "webhook-timestamp": str(ts), "webhook-signature": webhooks.sign(secret, "7", ts, body)}
    r = driver.do(cmd="verify_webhook", secret=secret, headers=headers, body=body)
    assert r["result"] == {"valid": True, "event": json.loads(body)}
    r = driver.do(cmd="verify_webhook", secret=secret, headers=headers, body=body.replace("3", "4"))
    assert r["result"]["valid"] is False and r["result"]["message"]


def test_the_driver_closes_everything_when_its_input_ends(driver, gateway, election):
    driver.do(cmd="start", name="a", gateways=[gateway.url], election=election, candidate="a", ttl_ms=60000)
    driver.report("leading", "a")
    driver.p.stdin.close()  # type: ignore[union-attr]
    assert driver.report("stopped", "a")["reason"] == "resigned"
    assert driver.p.wait(20) == 0
    with pytest.raises(elector.NoLeaderError):
        elector.Client(gateway.url).leader(election)


def test_the_driver_makes_the_session_calls(driver, gateway, election):
    gw = [gateway.url]
    opened = driver.do(cmd="call", op="open_session", gateways=gw, args={"ttl": "30s"})["result"]
    assert opened["id"].startswith("ses_") and opened["token"] and opened["ttl"] == "30s" and opened["candidates"] == []
    r = driver.do(cmd="call", op="campaign", gateways=gw, args={"election": election, "id": "a", "session": opened["id"]},
                  token=opened["token"])
    assert r["ok"] and r["result"]["token"] == opened["token"] and r["result"]["ttl"] == "30s"
    r = driver.do(cmd="call", op="heartbeat_session", gateways=gw, args={"session": opened["id"]}, token=opened["token"])
    assert [(c["election"], c["id"]) for c in r["result"]["candidates"]] == [(election, "a")]
    r = driver.do(cmd="call", op="close_session", gateways=gw, args={"session": opened["id"]}, token=opened["token"])
    assert r == {"ref": r["ref"], "ok": True, "result": {}}
    r = driver.do(cmd="call", op="heartbeat_session", gateways=gw, args={"session": opened["id"]}, token=opened["token"])
    assert (r["error"]["type"], r["error"]["class"]) == ("urn:elector:problem:session-not-found", "SessionNotFoundError")
