"""The plain calls against a real gateway, with typed problems and failover."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

import elector
from elector import webhooks

from conftest import Gateway, wait_until


def test_campaign_heartbeat_resign_hands_over(gateway, election):
    c = elector.Client(gateway.url)
    a = c.campaign(election, "node-a", ttl=60, metadata={"addr": "10.0.0.7:8080"})
    assert a.state == "leader" and a.term == 1 and a.token and a.metadata == {"addr": "10.0.0.7:8080"} and a.ttl == 60
    b = c.campaign(election, "node-b", ttl=60)
    assert (b.state, b.position, b.leader.id) == ("follower", 1, "node-a")
    hb = c.heartbeat(election, "node-b", b.token)
    assert hb.state == "follower" and hb.expires_at is not None and hb.token is None
    assert [x.id for x in c.candidates(election).candidates] == ["node-a", "node-b"]
    assert c.candidate(election, "node-a").state == "leader"
    assert c.leader(election).id == "node-a"
    e = c.election(election)
    assert (e.name, e.term, e.leader.id, e.candidates) == (election, 1, "node-a", 2)
    assert election in [x.name for x in c.elections()]

    c.resign(election, "node-a", a.token)
    l = c.leader(election)
    assert (l.id, l.term) == ("node-b", 2)
    c.resign(election, "node-b", b.token)
    with pytest.raises(elector.NoLeaderError) as no:
        c.leader(election)
    assert no.value.status == 404 and no.value.slug == "no-leader"


def test_local_reads_answer_as_linearizable_ones_and_bad_values_are_refused(gateway, election):
    c = elector.Client(gateway.url)
    c.campaign(election, "node-a", ttl=60)
    for read in (
        lambda **kw: c.leader(election, **kw),
        lambda **kw: c.election(election, **kw),
        lambda **kw: c.candidates(election, **kw),
        lambda **kw: c.candidate(election, "node-a", **kw),
        lambda **kw: [e for e in c.elections(**kw) if e.name == election],
    ):
        assert read(consistency="local") == read() == read(consistency="linearizable")
        with pytest.raises(elector.InvalidRequestError) as bad:
            read(consistency="stale")
        assert bad.value.status == 400 and "consistency" in str(bad.value)


def test_problems_come_back_typed(gateway, election):
    c = elector.Client(gateway.url)
    a = c.campaign(election, "a", ttl=60)
    cases = [
        (lambda: c.heartbeat(election, "a", "ect_wrong"), elector.TokenMismatchError, 403),
        (lambda: c.heartbeat(election, "ghost", a.token), elector.CandidateNotFoundError, 404),
        (lambda: c.campaign(election, "a", ttl=60), elector.CandidateExistsError, 409),
        (lambda: c.campaign(election, "b", ttl=7200), elector.InvalidRequestError, 400),
        (lambda: c.campaign("Not A Name", "b"), elector.InvalidRequestError, 400),
        (lambda: c.leader(election + "-none"), elector.ElectionNotFoundError, 404),
        (lambda: c.handover(election, "a", a.token), elector.NoTransferPendingError, 409),
        (lambda: c.transfer(election, "ghost"), elector.NotFollowerError, 409),
        (lambda: c.delete_election(election), elector.ElectionNotEmptyError, 409),
        (lambda: c.call("GET", ("v1", "nothing")), elector.NotFoundError, 404),
    ]
    for call, cls, status in cases:
        with pytest.raises(cls) as e:
            call()
        assert type(e.value) is cls and e.value.status == status and "ect_" not in str(e.value)
    with pytest.raises(elector.InvalidRequestError) as e:
        c.campaign(election, "b", ttl=7200)
    assert e.value.extensions.get("field") == "ttl"


def test_report_error_configure_and_delete(gateway, election):
    c = elector.Client(gateway.url)
    e = c.configure(election, error_cooldown=1.5, handover_delay=0)
    assert (e.settings.error_cooldown, e.settings.handover_delay) == (1.5, 0)
    a = c.campaign(election, "a", ttl=60)
    st = c.report_error(election, "a", a.token, "the work would not start")
    assert st.state == "error" and st.position == -1 and st.cooldown_until is not None
    assert c.configure(election, error_cooldown=None).settings.error_cooldown == 10
    c.resign(election, "a", a.token)
    c.delete_election(election)
    with pytest.raises(elector.ElectionNotFoundError):
        c.election(election)


def test_transfer_and_handover(gateway, election):
    c = elector.Client(gateway.url)
    a = c.campaign(election, "a", ttl=60)
    b = c.campaign(election, "b", ttl=60)
    e = c.transfer(election, "b", a.token)  # the leader asks with its own token
    assert e.transfer is not None and e.transfer.to == "b"
    with pytest.raises(elector.TransferPendingError) as tp:
        c.heartbeat(election, "a", a.token)
    assert tp.value.transfer["to"] == "b"
    st = c.handover(election, "a", a.token)
    assert st.state == "follower" and st.leader.id == "b" and st.term == 2
    c.resign(election, "a", a.token)
    c.resign(election, "b", b.token)


def test_cancel_transfer(gateway, election):
    c = elector.Client(gateway.url)
    a = c.campaign(election, "a", ttl=60)
    b = c.campaign(election, "b", ttl=60)
    c.transfer(election, "b", a.token)
    e = c.cancel_transfer(election, a.token)
    assert e.transfer is None and e.leader.id == "a"
    assert c.heartbeat(election, "a", a.token).state == "leader"
    with pytest.raises(elector.NoTransferPendingError):
        c.cancel_transfer(election)
    c.configure(election, preempt=True)
    p = c.campaign(election, "p", ttl=60, priority=10)
    def preempted():
        t = c.election(election).transfer
        return t is not None and t.to == "p"

    wait_until("preempt's transfer to p", preempted)
    with pytest.raises(elector.PreemptOnError):
        c.cancel_transfer(election)
    for id, token in (("a", a.token), ("b", b.token), ("p", p.token)):
        c.resign(election, id, token)


def test_holders(gateway, election):
    c = elector.Client(gateway.url)
    assert c.configure(election, holders=2).settings.holders == 2
    a = c.campaign(election, "a", ttl=60)
    b = c.campaign(election, "b", ttl=60)
    x = c.campaign(election, "c", ttl=60)
    assert (a.state, b.state, x.state) == ("leader", "leader", "follower")
    assert b.term > a.term and [h.id for h in b.holders] == ["a", "b"] and b.leader.id == "a"
    l = c.leader(election)
    assert l.id == "a" and [(h.id, h.term) for h in l.holders] == [("a", a.term), ("b", b.term)]
    with pytest.raises(elector.InvalidRequestError):
        c.transfer(election, "c")  # two hold: name the one that hands over
    e = c.transfer(election, "c", from_="b")
    assert e.transfer is not None and e.transfer.from_ == "b" and len(e.holders) == 2
    assert c.configure(election, holders=1).settings.holders == 1
    assert c.leader(election).holders == []
    for st in (a, b, x):
        c.resign(election, st.id, st.token)


class Receiver(http.server.BaseHTTPRequestHandler):
    got: "list" = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_real_delivery_verifies_and_a_tampered_one_does_not(gateway, election):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        c = elector.Client(gateway.url)
        sub = c.subscribe(election, "http://127.0.0.1:%d/hook" % srv.server_address[1], types=["leader.begin"])
        assert sub["secret"].startswith("whsec_") and c.subscription(election, sub["id"])["id"] == sub["id"]
        a = c.campaign(election, "a", ttl=60)
        deadline = time.monotonic() + 20
        while not Receiver.got and time.monotonic() < deadline:
            time.sleep(0.02)
        headers, body = Receiver.got[0]
        event = webhooks.verify(sub["secret"], headers, body)
        assert event["type"] == "leader.begin" and event["data"]["candidate"]["id"] == "a"
        with pytest.raises(webhooks.NoMatchingSignatureError):
            webhooks.verify(sub["secret"], headers, body.replace(b'"a"', b'"b"'))
        deliveries = c.deliveries(election, sub["id"])
        assert deliveries and deliveries[0]["event_id"] == headers["webhook-id"]
        c.unsubscribe(election, sub["id"])
        c.resign(election, "a", a.token)
    finally:
        srv.shutdown()


def test_health_and_ready_of_a_serving_gateway(gateway):
    c = elector.Client(gateway.url)
    h = c.health()
    assert h.status == "ok" and h.raw == {"status": "ok"}
    r = c.ready()
    assert r.status == "ready" and r.checks["backend"] == "ok"


def test_ready_raises_while_the_backend_starts_and_fails_over_to_a_ready_gateway(elector_bin, gateway):
    # An embedded cluster member whose peers never answer waits for them:
    # it lives, but is not ready, and says why.
    peers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    routes = ",".join("127.0.0.1:%d" % p.getsockname()[1] for p in peers)
    starting = Gateway(
        elector_bin,
        ["--embedded-server-name", "a", "--embedded-cluster-listen", "127.0.0.1:0", "--embedded-routes", routes],
        ready=False,
    )
    try:
        c = elector.Client([starting.url, gateway.url])
        assert c.health(gateway=0).status == "ok"
        with pytest.raises(elector.UnavailableError) as not_ready:
            c.ready(gateway=0)
        assert not_ready.value.status == 503 and not_ready.value.extensions["checks"]["backend"] == "starting"
        assert c.gateway_index == 0
        # Without an index it asks the gateway in use and fails over.
        assert c.ready().status == "ready" and c.gateway_index == 1
    finally:
        starting.stop()
        for p in peers:
            p.close()


def test_a_dead_first_gateway_fails_over_to_the_next(gateway, proxy, election):
    dead = proxy(gateway)
    dead.set_cut(True)
    c = elector.Client([dead.url, gateway.url])
    a = c.campaign(election, "a", ttl=60)
    assert c.gateway == gateway.url  # the one that answered is used from then on
    c.resign(election, "a", a.token)


def test_a_hung_gateway_costs_one_call(gateway, proxy, election):
    hung = proxy(gateway)
    hung.stall.set()
    c = elector.Client([hung.url, gateway.url], timeout=0.5)
    with pytest.raises(elector.TransportError) as e:
        c.election(election)
    assert e.value.timed_out
    assert c.gateway == gateway.url  # the next call starts with the next gateway
    with pytest.raises(elector.ElectionNotFoundError):
        c.election(election)


def test_problem_answers_do_not_fail_over(gateway, proxy, election):
    p = proxy(gateway)
    c = elector.Client([gateway.url, p.url])
    with pytest.raises(elector.ElectionNotFoundError):
        c.election(election)
    assert c.gateway == gateway.url


def test_keep_alive_connections_are_reused_and_replaced_when_dropped(gateway, proxy, election):
    p = proxy(gateway)
    c = elector.Client(p.url)
    a = c.campaign(election, "a", ttl=60)
    p.drop()  # the gateway side closes the kept-alive connection
    c.heartbeat(election, "a", a.token)  # sent again on a fresh connection
    c.resign(election, "a", a.token)
