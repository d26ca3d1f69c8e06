"""Client: one method per call of the HTTP API v1."""

from __future__ import annotations

import logging
import ssl
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

from ._http import Abort, Stream, Transport
from .errors import ElectorError, InvalidConfigError, ProblemError, TransportError
from .types import Candidates, Election, Health, Leader, Session, Status, format_duration
from .watch import DEFAULT_READ_TIMEOUT, DEFAULT_RECONNECT_DELAY, Observe, Watch

DEFAULT_TIMEOUT = 30.0
"""Seconds a plain call waits for its answer unless told otherwise."""
DEFAULT_USER_AGENT = "elector-client-python"

T = TypeVar("T")
_UNSET: Any = object()


def _session(session: Union[Session, str], token: Optional[str]) -> Tuple[str, Optional[str]]:
    """The id and token of a Session, or of an id and its token."""
    if isinstance(session, Session):
        return session.id, token or session.token
    return session, token


def fails_over(err: BaseException) -> bool:
    """Whether another gateway may answer where this one failed: no answer
    came, or a 5xx answer."""
    if isinstance(err, ProblemError):
        return err.status >= 500
    return isinstance(err, TransportError)


class Client:
    """Talks to an elector gateway: to one URL, or to several replicas of
    it. A call that fails in transport or with a 5xx answer goes to the
    next gateway at once, and the one that answered is used from then on; a
    call that one leaves unanswered until its deadline fails, and the next
    call starts with the next gateway. Safe for concurrent use.

    Every call takes ``timeout`` (seconds, default DEFAULT_TIMEOUT) and
    raises the ProblemError subclass of the gateway's problem document
    (CandidateNotFoundError, TokenMismatchError, NoLeaderError, …) or
    TransportError. Tokens are sent only in the Elector-Candidate-Token and
    Elector-Session-Token headers and never appear in errors or logs.
    """

    def __init__(
        self,
        gateways: Union[str, Sequence[str]],
        *,
        api_token: Optional[str] = None,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout: float = DEFAULT_TIMEOUT,
        reconnect_delay: float = DEFAULT_RECONNECT_DELAY,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        ssl_context: Optional[ssl.SSLContext] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        urls = [gateways] if isinstance(gateways, str) else list(gateways)
        if not urls:
            raise InvalidConfigError("no gateway given; give the gateway's URL, such as http://127.0.0.1:8080")
        self.transports: List[Transport] = [
            Transport(u, api_token=api_token, user_agent=user_agent, ssl_context=ssl_context) for u in urls
        ]
        self.timeout = timeout
        self.reconnect_delay = reconnect_delay
        self.read_timeout = read_timeout
        self.log = logger or logging.getLogger("elector")
        self._lock = threading.Lock()
        self._index = 0
        self._listeners: List[Callable[[int], None]] = []

    @property
    def gateway(self) -> str:
        """The URL of the gateway in use."""
        return self.transports[self._index].base_url

    @property
    def gateway_index(self) -> int:
        return self._index

    def on_gateway_change(self, f: Callable[[int], None]) -> None:
        """Calls f with the new index whenever the gateway in use changes."""
        with self._lock:
            self._listeners.append(f)

    def use_gateway(self, index: int) -> None:
        """Makes gateway ``index`` the one in use."""
        with self._lock:
            if index == self._index:
                return
            self._index = index
            listeners = list(self._listeners)
        self.log.info("elector: switched gateway to %s", self.transports[index].base_url)
        for f in listeners:
            f(index)

    def close(self) -> None:
        """Closes idle kept-alive connections."""
        for t in self.transports:
            t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def try_gateways(self, f: Callable[[Transport], T], *, abort: Optional[Abort] = None) -> T:
        """Calls f with the gateway in use and, while it fails in transport
        or with a 5xx, with the next ones in turn. A call that timed out
        moves the next call to the next gateway: a gateway that takes
        requests and never answers (a stopped process, a network dropping
        packets) costs one call, not every call for as long as it hangs."""
        start = self._index
        n = len(self.transports)
        err: Optional[ElectorError] = None
        for i in range(n):
            idx = (start + i) % n
            try:
                result = f(self.transports[idx])
            except ElectorError as e:
                if not fails_over(e):
                    if idx != start:
                        self.use_gateway(idx)
                    raise
                err = e
                if abort is not None and abort.cancelled:
                    raise
                if isinstance(e, TransportError) and e.timed_out:
                    if n > 1:
                        self.use_gateway((idx + 1) % n)
                    raise
                continue
            if idx != start:
                self.use_gateway(idx)
            return result
        assert err is not None
        raise err

    def call(
        self,
        method: str,
        segments: Sequence[str],
        *,
        body: Any = None,
        token: Optional[str] = None,
        query: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        abort: Optional[Abort] = None,
        content_type: str = "application/json",
        session_token: Optional[str] = None,
    ) -> Any:
        """One request to the API (path segments are escaped), with
        failover; the decoded JSON of the answer, or None. ``token`` is a
        candidate's token, ``session_token`` a session's."""
        t = self.timeout if timeout is None else timeout

        def do(tr: Transport) -> Any:
            return tr.request(
                method, tr.path(segments, query), body=body, token=token, timeout=t, abort=abort,
                content_type=content_type, session_token=session_token,
            )

        return self.try_gateways(do, abort=abort)

    # Candidates.

    def campaign(
        self,
        election: str,
        id: str,
        *,
        ttl: Optional[float] = None,
        metadata: Optional[Dict[str, Any]] = None,
        priority: Optional[int] = None,
        webhook: Optional[Dict[str, Any]] = None,
        session: Union[Session, str, None] = None,
        session_token: Optional[str] = None,
        timeout: Optional[float] = None,
        abort: Optional[Abort] = None,
    ) -> Status:
        """Enters candidate ``id`` in ``election`` (created by its first
        campaign); the answer's ``token`` is needed by heartbeat, resign and
        report_error. ``ttl`` in seconds (the gateway's default when None).

        ``session`` campaigns in a session (see ``open_session``): the
        Session that open_session returned, or its id with
        ``session_token``. The candidacy then lives as long as the session,
        with its TTL (leave ``ttl`` None), and its token is the session's.

        Raises CandidateExistsError when ``id`` already campaigns (resign it
        with its token or wait for its TTL), InvalidRequestError,
        LimitReachedError, UnavailableError; in a session also
        SessionNotFoundError, SessionInElectionError,
        SessionTokenMissingError, SessionTokenMismatchError."""
        body: Dict[str, Any] = {"id": id}
        if ttl is not None:
            body["ttl"] = format_duration(ttl)
        if priority:
            body["priority"] = priority
        if metadata is not None:
            body["metadata"] = metadata
        if webhook is not None:
            body["webhook"] = webhook
        if isinstance(session, Session):
            session_token = session_token or session.token
            session = session.id
        if session:
            body["session"] = session
        return Status.from_json(
            self.call(
                "POST", ("v1", "elections", election, "candidates"), body=body, timeout=timeout, abort=abort,
                session_token=session_token,
            )
        )

    def heartbeat(
        self, election: str, id: str, token: str, *, timeout: Optional[float] = None, abort: Optional[Abort] = None
    ) -> Status:
        """Keeps candidate ``id`` alive for another TTL; the answer says
        whether it leads. Raises CandidateNotFoundError when the candidacy
        resigned or expired (campaign again), TokenMismatchError,
        TransferPendingError (a leader asked to hand over), UnavailableError."""
        return Status.from_json(
            self.call(
                "PUT", ("v1", "elections", election, "candidates", id, "heartbeat"), token=token, timeout=timeout,
                abort=abort,
            )
        )

    def resign(
        self, election: str, id: str, token: str, *, timeout: Optional[float] = None, abort: Optional[Abort] = None
    ) -> None:
        """Withdraws candidate ``id``; a leader resigning hands over to the
        next in line at once. Raises CandidateNotFoundError,
        TokenMismatchError, UnavailableError."""
        self.call("DELETE", ("v1", "elections", election, "candidates", id), token=token, timeout=timeout, abort=abort)

    def report_error(
        self,
        election: str,
        id: str,
        token: str,
        reason: Optional[str] = None,
        *,
        timeout: Optional[float] = None,
        abort: Optional[Abort] = None,
    ) -> Status:
        """Tells the gateway that candidate ``id`` cannot lead (its work
        failed to start, say): a leader gives up leadership at once, and the
        candidate rejoins the back of the line after the election's error
        cooldown if it keeps heartbeating. ``reason`` is shown in the
        leader.error event; it must not carry secrets."""
        body = {"reason": reason} if reason else None
        return Status.from_json(
            self.call(
                "POST", ("v1", "elections", election, "candidates", id, "error"), body=body, token=token,
                timeout=timeout, abort=abort,
            )
        )

    def handover(
        self, election: str, id: str, token: str, *, timeout: Optional[float] = None, abort: Optional[Abort] = None
    ) -> Status:
        """Ends the leadership of ``id`` in favour of the pending transfer's
        target, which leads at once with the next term; ``id`` stays in line
        as a follower. Call it only once the candidate has stopped acting as
        leader. Raises NoTransferPendingError, NotLeaderError,
        CandidateNotFoundError, TokenMismatchError, NotSupportedError."""
        return Status.from_json(
            self.call(
                "POST", ("v1", "elections", election, "candidates", id, "handover"), token=token, timeout=timeout,
                abort=abort,
            )
        )

    def candidate(
        self, election: str, id: str, *, consistency: Optional[str] = None, timeout: Optional[float] = None
    ) -> Status:
        """The status of candidate ``id``, without extending its TTL.
        ``consistency``: see ``leader``."""
        return Status.from_json(
            self.call(
                "GET", ("v1", "elections", election, "candidates", id), query={"consistency": consistency},
                timeout=timeout,
            )
        )

    def candidates(
        self, election: str, *, consistency: Optional[str] = None, timeout: Optional[float] = None
    ) -> Candidates:
        """The line of ``election``, leader first. ``consistency``: see
        ``leader``. Raises ElectionNotFoundError."""
        return Candidates.from_json(
            self.call(
                "GET", ("v1", "elections", election, "candidates"), query={"consistency": consistency},
                timeout=timeout,
            )
        )

    # Sessions.

    def open_session(self, ttl: Optional[float] = None, *, timeout: Optional[float] = None) -> Session:
        """Opens a session: one liveness for many candidacies, as etcd's
        concurrency.Session is one lease for many elections. Campaign in
        each election with ``session=`` and heartbeat the session alone;
        every candidacy of the session ends with it. ``ttl`` in seconds
        (the gateway's default when None). The answer's ``token`` (keep it
        secret) is needed by the session's calls and its campaigns, and is
        the token of each of its candidacies too.

        Raises InvalidRequestError (a ttl outside the gateway's bounds),
        LimitReachedError, UnavailableError."""
        body = {"ttl": format_duration(ttl)} if ttl is not None else None
        return Session.from_json(self.call("POST", ("v1", "sessions"), body=body, timeout=timeout))

    def heartbeat_session(
        self, session: Union[Session, str], token: Optional[str] = None, *, timeout: Optional[float] = None
    ) -> Session:
        """Renews ``session`` (a Session, or its id with ``token``) and
        every candidacy in it by the session's TTL; the answer lists them,
        each with its own ``state``, ``term`` and ``expires_at``, and keeps
        the token. Heartbeat every TTL/3. A leader in the session obeys the
        step-down rule on each answer (``Session.step_down_deadline``, with
        the term it leads with), and stops acting as soon as an answer no
        longer shows its candidacy leading with that term.

        Raises SessionNotFoundError when the session was closed or expired,
        its candidacies with it (open another and campaign again),
        SessionTokenMismatchError, SessionTokenMissingError,
        UnavailableError."""
        sid, tok = _session(session, token)
        s = Session.from_json(
            self.call("PUT", ("v1", "sessions", sid, "heartbeat"), session_token=tok, timeout=timeout)
        )
        s.token = tok
        return s

    def close_session(
        self, session: Union[Session, str], token: Optional[str] = None, *, timeout: Optional[float] = None
    ) -> None:
        """Ends ``session`` (a Session, or its id with ``token``): each of
        its candidacies resigns, a leader handing over at once. Raises as
        heartbeat_session."""
        sid, tok = _session(session, token)
        self.call("DELETE", ("v1", "sessions", sid), session_token=tok, timeout=timeout)

    # Elections.

    def leader(self, election: str, *, consistency: Optional[str] = None, timeout: Optional[float] = None) -> Leader:
        """The current leader of ``election`` and its term. Raises
        NoLeaderError (``extensions`` may hold ``handover_until``),
        ElectionNotFoundError.

        ``consistency``: None or ``"linearizable"`` (the gateway's default)
        reflects every write acknowledged before the call, on any replica;
        ``"local"`` is answered from the replica's own copy as it is, without
        asking the backend first, and may lag another replica's write by the
        replica's watch delay: act on it only with its fencing term."""
        return Leader.from_json(
            self.call(
                "GET", ("v1", "elections", election, "leader"), query={"consistency": consistency}, timeout=timeout
            )
        )

    def election(
        self, election: str, *, consistency: Optional[str] = None, timeout: Optional[float] = None
    ) -> Election:
        """``election``'s settings, term and leader. ``consistency``: see
        ``leader``. Raises ElectionNotFoundError."""
        return Election.from_json(
            self.call("GET", ("v1", "elections", election), query={"consistency": consistency}, timeout=timeout)
        )

    def elections(self, *, consistency: Optional[str] = None, timeout: Optional[float] = None) -> List[Election]:
        """Every election, sorted by name. ``consistency``: see ``leader``."""
        doc = self.call("GET", ("v1", "elections"), query={"consistency": consistency}, timeout=timeout) or {}
        return [Election.from_json(e) for e in doc.get("elections") or []]

    def configure(
        self,
        election: str,
        *,
        error_cooldown: Optional[float] = _UNSET,
        handover_delay: Optional[float] = _UNSET,
        preempt: Optional[bool] = _UNSET,
        holders: Optional[int] = _UNSET,
        timeout: Optional[float] = None,
    ) -> Election:
        """Changes ``election``'s settings (a JSON merge patch), creating the
        election if it does not exist; needs the admin scope. A setting left
        out stays as it is; None resets it to the gateway's default.
        Durations in seconds. ``holders`` (1 to 64) is how many candidates
        hold the election at once. Raises InvalidRequestError,
        NotSupportedError (preempt on a backend without transfers, holders
        above 1 on one without several holders), ForbiddenError."""
        patch: Dict[str, Any] = {}
        for key, value in (("error_cooldown", error_cooldown), ("handover_delay", handover_delay)):
            if value is not _UNSET:
                patch[key] = None if value is None else format_duration(value)
        if preempt is not _UNSET:
            patch["preempt"] = preempt
        if holders is not _UNSET:
            patch["holders"] = holders
        return Election.from_json(
            self.call(
                "PATCH", ("v1", "elections", election), body=patch, timeout=timeout,
                content_type="application/merge-patch+json",
            )
        )

    def delete_election(self, election: str, *, timeout: Optional[float] = None) -> None:
        """Deletes ``election`` once nobody campaigns in it (admin scope).
        Raises ElectionNotFoundError, ElectionNotEmptyError."""
        self.call("DELETE", ("v1", "elections", election), timeout=timeout)

    def transfer(
        self,
        election: str,
        to: str,
        token: Optional[str] = None,
        *,
        from_: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Election:
        """Asks the leader of ``election`` to hand over to follower ``to``.
        With ``token`` None the caller acts as an operator (admin scope);
        otherwise ``token`` is the leader's own candidate token. With several
        holders ``from_`` names the holder that hands over (an operator must
        name one while more than one holds). Raises NoLeaderError,
        NotFollowerError, NotLeaderError, TransferPendingError,
        TransferBlockedError, NotSupportedError, InvalidRequestError."""
        body = {"to": to}
        if from_:
            body["from"] = from_
        return Election.from_json(
            self.call("POST", ("v1", "elections", election, "transfer"), body=body, token=token, timeout=timeout)
        )

    def cancel_transfer(
        self, election: str, token: Optional[str] = None, *, timeout: Optional[float] = None
    ) -> Election:
        """Cancels the pending transfer of ``election`` while its leader still
        leads: the leader goes on leading in the same term and its heartbeats
        count again. With ``token`` None the caller acts as an operator
        (admin scope); otherwise ``token`` is the leader's own candidate
        token. Raises NoTransferPendingError (none pending, or the leadership
        it asked to hand over has ended), NotLeaderError, PreemptOnError,
        NotSupportedError, ElectionNotFoundError, ForbiddenError."""
        return Election.from_json(
            self.call("DELETE", ("v1", "elections", election, "transfer"), token=token, timeout=timeout)
        )

    # Webhook subscriptions and delivery logs: the API's JSON as dicts.

    def subscribe(
        self,
        election: str,
        url: str,
        *,
        types: Optional[Sequence[str]] = None,
        secret: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Subscribes ``url`` to ``election``'s events; the answer's
        ``secret`` (shown only here) verifies deliveries."""
        body: Dict[str, Any] = {"url": url}
        if types:
            body["types"] = list(types)
        if secret:
            body["secret"] = secret
        return self.call("POST", ("v1", "elections", election, "subscriptions"), body=body, timeout=timeout)

    def subscriptions(self, election: str, *, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        doc = self.call("GET", ("v1", "elections", election, "subscriptions"), timeout=timeout) or {}
        return list(doc.get("subscriptions") or [])

    def subscription(self, election: str, sub: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self.call("GET", ("v1", "elections", election, "subscriptions", sub), timeout=timeout)

    def unsubscribe(self, election: str, sub: str, *, timeout: Optional[float] = None) -> None:
        self.call("DELETE", ("v1", "elections", election, "subscriptions", sub), timeout=timeout)

    def rotate_secret(self, election: str, sub: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self.call("POST", ("v1", "elections", election, "subscriptions", sub, "rotate-secret"), timeout=timeout)

    def deliveries(
        self, election: str, sub: str, *, limit: Optional[int] = None, timeout: Optional[float] = None
    ) -> List[Dict[str, Any]]:
        """The subscription's delivery log, newest first."""
        doc = self.call(
            "GET", ("v1", "elections", election, "subscriptions", sub, "deliveries"), query={"limit": limit},
            timeout=timeout,
        ) or {}
        return list(doc.get("deliveries") or [])

    def delivery(self, election: str, sub: str, delivery: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self.call("GET", ("v1", "elections", election, "subscriptions", sub, "deliveries", delivery), timeout=timeout)

    def redeliver(self, election: str, sub: str, delivery: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self.call(
            "POST", ("v1", "elections", election, "subscriptions", sub, "deliveries", delivery, "redeliver"),
            timeout=timeout,
        )

    def candidate_deliveries(
        self, election: str, id: str, token: str, *, limit: Optional[int] = None, timeout: Optional[float] = None
    ) -> List[Dict[str, Any]]:
        """The delivery log of candidate ``id``'s own webhook."""
        doc = self.call(
            "GET", ("v1", "elections", election, "candidates", id, "deliveries"), token=token, query={"limit": limit},
            timeout=timeout,
        ) or {}
        return list(doc.get("deliveries") or [])

    def redeliver_candidate(
        self, election: str, id: str, token: str, delivery: str, *, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        return self.call(
            "POST", ("v1", "elections", election, "candidates", id, "deliveries", delivery, "redeliver"), token=token,
            timeout=timeout,
        )

    # Probes.

    def health(self, *, gateway: Optional[int] = None, timeout: Optional[float] = None) -> Health:
        """The liveness probe, /healthz: whether the gateway process serves
        HTTP at all. No API token is needed. With ``gateway`` None it asks
        the gateway in use, failing over as every call does; with an index,
        that gateway only."""
        return Health.from_json(self._probe("healthz", gateway, timeout))

    def ready(self, *, gateway: Optional[int] = None, timeout: Optional[float] = None) -> Health:
        """The readiness probe, /readyz: whether the gateway serves writes
        now (``checks`` names each check). Raises UnavailableError while it
        does not, its ``extensions["checks"]`` saying which check failed
        (``backend``: ``starting`` while the gateway opens its backend,
        ``unreachable``, …). ``gateway`` as in health."""
        return Health.from_json(self._probe("readyz", gateway, timeout))

    def _probe(self, path: str, gateway: Optional[int], timeout: Optional[float]) -> Any:
        if gateway is None:
            return self.call("GET", (path,), timeout=timeout)
        tr = self.transports[gateway]
        return tr.request("GET", tr.path((path,)), timeout=self.timeout if timeout is None else timeout)

    # Event streams.

    def stream_connector(
        self, election: Optional[str], *, gateway: Optional[int] = None, timeout: Optional[float] = None
    ) -> Callable[[str, Abort], Stream]:
        """How a Watch opens its stream: through the gateway in use with
        failover, or through gateway number ``gateway`` only."""
        segments = ("v1", "elections", election, "events") if election else ("v1", "events")
        t = self.timeout if timeout is None else timeout

        def connect(last_id: str, abort: Abort) -> Stream:
            headers = {"Cache-Control": "no-cache"}
            if last_id:
                headers["Last-Event-ID"] = last_id

            def open_on(tr: Transport) -> Stream:
                return tr.open_stream(tr.path(segments), headers, timeout=t, abort=abort)

            if gateway is not None:
                return open_on(self.transports[gateway])
            return self.try_gateways(open_on, abort=abort)

        return connect

    def watch(self, election: Optional[str] = None, last_event_id: str = "") -> Watch:
        """Follows the events of ``election`` (of every election when None),
        starting after ``last_event_id`` or, when it is "", with a reset
        snapshot of the election followed by its new events. See Watch."""
        return Watch(
            self.stream_connector(election), last_event_id, reconnect_delay=self.reconnect_delay,
            read_timeout=self.read_timeout, logger=self.log,
        )

    def observe(self, election: str) -> Observe:
        """Follows who leads ``election``, including "no leader". See Observe."""
        return Observe(self.watch(election), election)
