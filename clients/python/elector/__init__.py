"""elector: the Python client of elector, an HTTP leader-election gateway.

A :class:`Candidacy` campaigns for you and runs your code while you lead::

    import socket
    from elector import Candidacy

    def bill(leadership):
        # Runs in a thread of its own while this process leads.
        while not leadership.stopped.wait(1.0):
            run_billing(term=leadership.term)  # pass the term to what you guard

    with Candidacy("http://127.0.0.1:8080", "billing", socket.gethostname(), ttl=10,
                   on_started_leading=bill) as candidacy:
        candidacy.wait()  # leaving the block resigns: the next candidate leads at once

It campaigns, heartbeats every TTL/3, campaigns again when the candidacy
expired, tries the next gateway when one fails, backs off with jitter
(honouring Retry-After), hands over at once when asked to (a transfer), and
obeys the **step-down rule**: a leader that has had no successful heartbeat
for its TTL minus a margin (max(TTL/10, 0.5 s)), counted from when that
heartbeat was sent, stops acting as leader, whatever it last heard. The
:class:`Leadership` it hands your code ends at that deadline at the latest,
and every check of it looks at the clock itself, so a process that was
paused past the deadline sees it over at its first look.

:class:`Client` has one method per call of the HTTP API v1, raising the
:class:`ProblemError` subclass of each problem type
(:class:`CandidateNotFoundError`, :class:`TokenMismatchError`, …);
``Client.watch`` and ``Client.observe`` follow an election over
Server-Sent Events, resuming with ``Last-Event-ID``. :mod:`elector.webhooks`
verifies the signed webhooks the gateway sends.

Standard library only; Python 3.9 or later.
"""

from __future__ import annotations

from ._backoff import step_down_margin
from .candidacy import DEFAULT_ERROR_TIMEOUT, DEFAULT_TTL, MAX_RETRY_DELAY, Candidacy, Standing
from .client import DEFAULT_TIMEOUT, Client
from .errors import *  # noqa: F401,F403  (every exception class)
from .errors import PROBLEM_CLASSES, PROBLEM_TYPE_PREFIX, LeadershipLost, parse_retry_after
from .leadership import (
    REASON_ELECTED,
    REASON_ERROR,
    REASON_EXPIRED,
    REASON_HEARTBEAT_TIMEOUT,
    REASON_LOST,
    REASON_RESIGNED,
    REASON_TRANSFERRED,
    Leadership,
)
from .session_keeper import SessionKeeper, SessionLead, keep_session
from .types import *  # noqa: F401,F403
from .watch import Observe, Watch
from .webhooks import WebhookVerificationError

__version__ = "1.0.0"

# A library logs, the program decides where to: nothing shows until the
# program configures logging (the Candidacy's logger= takes another logger).
import logging as _logging

_logging.getLogger("elector").addHandler(_logging.NullHandler())
