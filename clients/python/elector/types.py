"""The API's documents as Python values.

Names follow ``openapi.yaml``. Times are timezone-aware ``datetime`` values
in UTC (``None`` when the API leaves them out), durations are seconds as
``float``. Every value keeps the JSON it was read from in ``raw``.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ._backoff import step_down_margin

# The states of a candidate.
STATE_FOLLOWER = "follower"
STATE_LEADER = "leader"
STATE_ERROR = "error"

# The event types of the stream.
EVENT_LEADER_BEGIN = "leader.begin"
EVENT_LEADER_END = "leader.end"
EVENT_LEADER_ERROR = "leader.error"
EVENT_CANDIDATE_JOINED = "candidate.joined"
EVENT_CANDIDATE_LEFT = "candidate.left"
EVENT_LEADER_TRANSFER = "leader.transfer"
EVENT_TRANSFER_CANCELLED = "leader.transfer_cancelled"
EVENT_RESET = "reset"

_TIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_time(value: Any) -> Optional[_dt.datetime]:
    """Reads an RFC 3339 time (any number of fractional digits; Python
    3.9's fromisoformat reads neither those nor "Z"); None for "" or null.
    Raises ValueError for anything else."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("time %r is not a string" % (value,))
    m = _TIME.fullmatch(value)
    if m is None:
        raise ValueError("time %r is not RFC 3339" % value)
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    if m.group(8):
        tz = _dt.timezone.utc
    else:
        offset = _dt.timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        tz = _dt.timezone(offset if m.group(9) == "+" else -offset)
    return _dt.datetime(year, month, day, hour, minute, min(second, 59), micro, tz).astimezone(_dt.timezone.utc)


def parse_duration(value: Any) -> float:
    """Reads a Go duration string ("10s", "1m30s", "500ms") as seconds.
    Raises ValueError for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or value == "":
        raise ValueError("duration %r is not a Go duration string" % (value,))
    s, sign = value, 1.0
    if s[0] in "+-":
        sign, s = (-1.0 if s[0] == "-" else 1.0), s[1:]
    if s == "0":
        return 0.0
    total, pos = 0.0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError("duration %r is not a Go duration string" % value)
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise ValueError("duration %r is not a Go duration string" % value)
    return sign * total


def format_duration(seconds: float) -> str:
    """Writes seconds as a Go duration string the gateway reads: whole
    milliseconds ("10s", "1500ms")."""
    ms = int(round(seconds * 1000))
    if ms % 1000 == 0:
        return "%ds" % (ms // 1000)
    return "%dms" % ms


def _opt_time(d: Dict[str, Any], key: str) -> Optional[_dt.datetime]:
    return parse_time(d.get(key))


def _duration(d: Dict[str, Any], key: str) -> float:
    v = d.get(key)
    return parse_duration(v) if v not in (None, "") else 0.0


def _obj(v: Any) -> Dict[str, Any]:
    return v if isinstance(v, dict) else {}


@dataclass
class Leader:
    """The leader of an election and its fencing term; with several holders
    (the election's ``holders`` setting above 1), one holder and the term of
    its holdership. In what :meth:`Client.observe` yields, ``id`` is ``""``
    when nobody leads (the term is then the last leadership's).
    ``holders`` lists every holder, the longest-standing first, in the
    answer of :meth:`Client.leader` when the election has more than one
    slot; it is empty with one."""

    id: str
    term: int
    metadata: Dict[str, Any] = field(default_factory=dict)
    since: Optional[_dt.datetime] = None
    expires_at: Optional[_dt.datetime] = None
    election: str = ""
    holders: List["Leader"] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Leader":
        return cls(
            id=d.get("id", ""),
            term=int(d.get("term", 0)),
            metadata=_obj(d.get("metadata")),
            since=_opt_time(d, "since"),
            expires_at=_opt_time(d, "expires_at"),
            election=d.get("election", ""),
            holders=_holders(d.get("holders")),
            raw=d,
        )


def _leader(v: Any) -> Optional[Leader]:
    return Leader.from_json(v) if isinstance(v, dict) else None


def _holders(v: Any) -> List[Leader]:
    """The ``holders`` member: every holder, or [] when left out (one slot)."""
    return [Leader.from_json(h) for h in v or [] if isinstance(h, dict)]


@dataclass
class Transfer:
    """A pending transfer of leadership to a named follower; ``from_`` is
    the holder asked to hand over (with one holder, the leader)."""

    to: str
    reason: str
    requested_at: Optional[_dt.datetime] = None
    from_: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Transfer":
        return cls(
            to=d.get("to", ""), reason=d.get("reason", ""), requested_at=_opt_time(d, "requested_at"),
            from_=d.get("from", ""), raw=d,
        )


def _transfer(v: Any) -> Optional[Transfer]:
    return Transfer.from_json(v) if isinstance(v, dict) else None


@dataclass
class Status:
    """What a candidate learns from campaign, heartbeat, error report and
    handover: its own record, its place in line and the leader. ``term`` is
    its own term while it leads (holds); ``leader`` is, with several
    holders, the longest-standing, and ``holders`` lists them all (empty
    with one slot). ``token`` (and ``webhook_secret``, when the campaign
    gave a webhook) are set only in a campaign's answer."""

    election: str
    id: str
    state: str
    position: int
    term: int
    metadata: Dict[str, Any] = field(default_factory=dict)
    ttl: float = 0.0
    joined_at: Optional[_dt.datetime] = None
    expires_at: Optional[_dt.datetime] = None
    cooldown_until: Optional[_dt.datetime] = None
    leader: Optional[Leader] = None
    priority: int = 0
    transfer: Optional[Transfer] = None
    holders: List[Leader] = field(default_factory=list)
    token: Optional[str] = field(default=None, repr=False)
    webhook_secret: Optional[str] = field(default=None, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Status":
        return cls(
            election=d.get("election", ""),
            id=d.get("id", ""),
            state=d.get("state", ""),
            position=int(d.get("position", 0)),
            term=int(d.get("term", 0)),
            metadata=_obj(d.get("metadata")),
            ttl=_duration(d, "ttl"),
            joined_at=_opt_time(d, "joined_at"),
            expires_at=_opt_time(d, "expires_at"),
            cooldown_until=_opt_time(d, "cooldown_until"),
            leader=_leader(d.get("leader")),
            priority=int(d.get("priority", 0)),
            transfer=_transfer(d.get("transfer")),
            holders=_holders(d.get("holders")),
            token=d.get("token"),
            webhook_secret=d.get("webhook_secret"),
            raw=d,
        )


@dataclass
class SessionCandidate:
    """One candidacy of a session. ``state`` is its state as its own
    heartbeat would answer it (``leader``, ``follower`` or ``error``), and
    ``term`` its own term (its fencing token) while it is ``leader``, else
    the election's term: a holder that the gateway deposed (a failed begin
    webhook, a lowered holders setting) is still renewed by the session's
    heartbeats, as a follower or in error, and must not act as leader
    whatever its ``expires_at``. ``expires_at`` is its own expiry: the
    session's, but for a leader asked to hand over (a transfer), which a
    heartbeat does not renew; a leader must stop acting by then unless
    renewed again (see :meth:`Session.step_down_deadline`)."""

    election: str
    id: str
    state: str = ""
    term: int = 0
    expires_at: Optional[_dt.datetime] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SessionCandidate":
        return cls(
            election=d.get("election", ""),
            id=d.get("id", ""),
            state=d.get("state", ""),
            term=int(d.get("term", 0)),
            expires_at=_opt_time(d, "expires_at"),
            raw=d,
        )


@dataclass
class Session:
    """One liveness shared by many candidacies, as etcd's
    concurrency.Session is one lease shared by a process's elections: what
    :meth:`Client.open_session` and :meth:`Client.heartbeat_session`
    answer. ``candidates`` are its candidacies as its heartbeat left them
    (none when it was opened). ``token`` is the session's token, which its
    calls and its campaigns need: set by ``open_session``, and carried over
    by ``heartbeat_session`` from the token it was given."""

    id: str
    ttl: float = 0.0
    expires_at: Optional[_dt.datetime] = None
    candidates: List[SessionCandidate] = field(default_factory=list)
    token: Optional[str] = field(default=None, repr=False)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Session":
        return cls(
            id=d.get("id", ""),
            ttl=_duration(d, "ttl"),
            expires_at=_opt_time(d, "expires_at"),
            candidates=[SessionCandidate.from_json(c) for c in d.get("candidates") or [] if isinstance(c, dict)],
            token=d.get("token"),
            raw=d,
        )

    def candidate(self, election: str) -> Optional[SessionCandidate]:
        """The session's candidacy in ``election``, or None."""
        for c in self.candidates:
            if c.election == election:
                return c
        return None

    def step_down_deadline(self, election: str, term: int, sent: float) -> Optional[float]:
        """The step-down rule for the session's candidacy in ``election``,
        this Session being the answer of a heartbeat sent at ``sent``
        (seconds on any clock of this process, such as ``time.monotonic()``),
        for a leader of that election that leads with ``term`` (the term its
        campaign, or the last answer, gave it). None unless the candidacy is
        ``leader`` with that very term; then the moment, on that clock, by
        which the leader must stop acting unless a later heartbeat renews
        it: ``sent`` plus what the heartbeat gave the candidacy (the
        session's TTL, less for a leader asked to hand over) minus
        ``step_down_margin`` of the TTL. Only the gateway's times are
        compared with each other, so the two clocks need not agree.

        A leader must stop acting at once when it returns None: the session
        has no candidacy in ``election``, or the gateway deposed it (a
        follower or in error, though the heartbeat renewed it), or it leads
        with another term (it lost the leadership and won it again, so what
        it did under ``term`` is fenced off)."""
        c = self.candidate(election)
        if c is None or c.state != STATE_LEADER or c.term != term:
            return None
        given = self.ttl
        if c.expires_at is not None and self.expires_at is not None:
            began = self.expires_at - _dt.timedelta(seconds=self.ttl)  # the heartbeat's start, on the gateway's clock
            given = min((c.expires_at - began).total_seconds(), self.ttl)
        return sent + given - step_down_margin(self.ttl)


@dataclass
class Candidate:
    """One candidate in the line of an election."""

    id: str
    state: str
    position: int
    metadata: Dict[str, Any] = field(default_factory=dict)
    ttl: float = 0.0
    priority: int = 0
    joined_at: Optional[_dt.datetime] = None
    expires_at: Optional[_dt.datetime] = None
    term: int = 0
    cooldown_until: Optional[_dt.datetime] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Candidate":
        return cls(
            id=d.get("id", ""),
            state=d.get("state", ""),
            position=int(d.get("position", 0)),
            metadata=_obj(d.get("metadata")),
            ttl=_duration(d, "ttl"),
            priority=int(d.get("priority", 0)),
            joined_at=_opt_time(d, "joined_at"),
            expires_at=_opt_time(d, "expires_at"),
            term=int(d.get("term", 0)),
            cooldown_until=_opt_time(d, "cooldown_until"),
            raw=d,
        )


@dataclass
class Candidates:
    """An election's line of candidates, leader first."""

    election: str
    term: int
    candidates: List[Candidate] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Candidates":
        return cls(
            election=d.get("election", ""),
            term=int(d.get("term", 0)),
            candidates=[Candidate.from_json(c) for c in d.get("candidates") or [] if isinstance(c, dict)],
            raw=d,
        )


@dataclass
class Settings:
    """An election's knobs."""

    error_cooldown: float = 0.0
    handover_delay: float = 0.0
    preempt: bool = False
    holders: int = 1
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Settings":
        return cls(
            error_cooldown=_duration(d, "error_cooldown"),
            handover_delay=_duration(d, "handover_delay"),
            preempt=bool(d.get("preempt", False)),
            holders=int(d.get("holders") or 1),
            raw=d,
        )


@dataclass
class Election:
    """One election as ``GET /v1/elections/{election}`` shows it."""

    name: str
    settings: Settings
    term: int
    leader: Optional[Leader] = None
    candidates: int = 0
    handover_until: Optional[_dt.datetime] = None
    transfer: Optional[Transfer] = None
    holders: List[Leader] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Election":
        return cls(
            name=d.get("name", ""),
            settings=Settings.from_json(_obj(d.get("settings"))),
            term=int(d.get("term", 0)),
            leader=_leader(d.get("leader")),
            candidates=int(d.get("candidates", 0)),
            handover_until=_opt_time(d, "handover_until"),
            transfer=_transfer(d.get("transfer")),
            holders=_holders(d.get("holders")),
            raw=d,
        )


@dataclass
class Snapshot:
    """The whole state of one election: the data of a ``reset`` event."""

    election: str
    settings: Settings
    term: int
    leader: Optional[Leader] = None
    handover_until: Optional[_dt.datetime] = None
    transfer: Optional[Transfer] = None
    candidates: List[Candidate] = field(default_factory=list)
    holders: List[Leader] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Snapshot":
        return cls(
            election=d.get("election", ""),
            settings=Settings.from_json(_obj(d.get("settings"))),
            term=int(d.get("term", 0)),
            leader=_leader(d.get("leader")),
            holders=_holders(d.get("holders")),
            handover_until=_opt_time(d, "handover_until"),
            transfer=_transfer(d.get("transfer")),
            candidates=[Candidate.from_json(c) for c in d.get("candidates") or [] if isinstance(c, dict)],
            raw=d,
        )


@dataclass
class Health:
    """The answer of the probes: ``status`` "ok" (health) or "ready"
    (ready), and ready's ``checks`` by name (backend, watch, webhooks)."""

    status: str
    checks: Dict[str, str] = field(default_factory=dict)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Health":
        return cls(status=d.get("status", ""), checks=dict(_obj(d.get("checks"))), raw=d)


@dataclass
class CandidateRef:
    """Names a candidate inside an event."""

    id: str
    metadata: Dict[str, Any] = field(default_factory=dict)


@dataclass
class TermRef:
    """Names a past leadership inside an event."""

    id: str
    term: int


@dataclass
class EventData:
    """The data of a transition event."""

    election: str
    term: int
    candidate: Optional[CandidateRef] = None
    previous: Optional[TermRef] = None
    reason: str = ""
    detail: str = ""

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "EventData":
        c, p = d.get("candidate"), d.get("previous")
        return cls(
            election=d.get("election", ""),
            term=int(d.get("term", 0)),
            candidate=CandidateRef(c.get("id", ""), _obj(c.get("metadata"))) if isinstance(c, dict) else None,
            previous=TermRef(p.get("id", ""), int(p.get("term", 0))) if isinstance(p, dict) else None,
            reason=d.get("reason", "") or "",
            detail=d.get("detail", "") or "",
        )


@dataclass
class Event:
    """One message of an event stream. ``id`` is stable across gateway
    replicas (pass the last one seen to resume); a ``reset`` that is not the
    last of a series has none (``""``). ``data`` is set for transition
    events, ``snapshot`` for ``reset``; ``raw`` is the JSON payload."""

    id: str
    type: str
    timestamp: Optional[_dt.datetime] = None
    data: Optional[EventData] = None
    snapshot: Optional[Snapshot] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, id: str, event: str, d: Dict[str, Any]) -> "Event":
        """Decodes a payload; raises ValueError (or KeyError, TypeError) for
        one that does not fit."""
        typ = d.get("type") or event
        data = d.get("data")
        ev = cls(id=id, type=typ, timestamp=parse_time(d.get("timestamp")), raw=d)
        if isinstance(data, dict):
            if typ == EVENT_RESET:
                ev.snapshot = Snapshot.from_json(data)
            else:
                ev.data = EventData.from_json(data)
        return ev


__all__ = sorted(
    [n for n, v in dict(globals()).items() if not n.startswith("_") and (n.isupper() or (isinstance(v, type) and v.__module__ == __name__))]
    + ["parse_time", "parse_duration", "format_duration"]
)
