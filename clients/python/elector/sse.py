"""A streaming parser of ``text/event-stream``, as the HTML standard's
event stream interpretation defines it.

Bytes go in as they arrive, in chunks of any size (a line, or a CR LF, may
be split between chunks); whole messages come out::

    parser = SSEParser()
    for chunk in chunks:
        for message in parser.feed(chunk):
            print(message.id, message.event, message.data)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

MAX_LINE = 1 << 20
"""The longest line accepted, in bytes; the gateway's are a few kilobytes."""


class SSEError(ValueError):
    """The stream cannot be read as an event stream (a line over MAX_LINE)."""


@dataclass
class Message:
    """One dispatched message. ``id`` is the last event id after it (sticky,
    per the standard); ``has_id`` says whether the message itself carried
    an id field. ``event`` is ``"message"`` when the stream named none."""

    id: str
    has_id: bool
    event: str
    data: str


class SSEParser:
    """Turns chunks of an event stream into messages. ``last_id`` and
    ``retry`` (seconds, or None until the stream sent a valid ``retry:``)
    are kept across messages. Not safe for concurrent use."""

    def __init__(self, last_id: str = "") -> None:
        self.last_id = last_id
        self.retry: Optional[float] = None
        self._buf = bytearray()
        self._skip_lf = False  # the previous line ended with CR: a LF next is part of it
        self._first = True
        self._data: List[str] = []
        self._has_data = False
        self._event = ""
        self._has_id = False

    def feed(self, chunk: bytes) -> List[Message]:
        """Parses ``chunk`` and returns the messages it completed. Raises
        SSEError for a line longer than MAX_LINE."""
        out: List[Message] = []
        buf = self._buf
        buf.extend(chunk)
        start = 0
        n = len(buf)
        while start < n:
            if self._skip_lf:
                self._skip_lf = False
                if buf[start] == 0x0A:
                    start += 1
                    continue
            cr = buf.find(b"\r", start)
            lf = buf.find(b"\n", start)
            if cr < 0 and lf < 0:
                break
            end = lf if cr < 0 or (0 <= lf < cr) else cr
            line = bytes(buf[start:end])
            self._skip_lf = buf[end] == 0x0D
            start = end + 1
            msg = self._line(line)
            if msg is not None:
                out.append(msg)
        del buf[:start]
        if len(buf) > MAX_LINE:
            raise SSEError("an event stream line is longer than %d bytes" % MAX_LINE)
        return out

    def _line(self, raw: bytes) -> Optional[Message]:
        line = raw.decode("utf-8", "replace")
        if self._first:
            self._first = False
            if line.startswith("\ufeff"):
                line = line[1:]
        if line == "":
            if not self._has_data:
                self._event, self._has_id = "", False
                return None
            msg = Message(self.last_id, self._has_id, self._event or "message", "\n".join(self._data))
            self._data, self._has_data, self._event, self._has_id = [], False, "", False
            return msg
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id":
            if "\x00" not in value:
                self.last_id, self._has_id = value, True
        elif name == "retry":
            if value.isdigit() and value.isascii():
                self.retry = int(value) / 1000.0
        return None
