"""The event stream parser follows the HTML standard, in chunks of any size."""

from __future__ import annotations

import random

import pytest

from elector.sse import MAX_LINE, Message, SSEError, SSEParser

STREAM = (
    "\ufeffretry: 1500\n: connected\n\n"
    "id: 1\nevent: reset\ndata: {\"a\":1}\n\n"
    "data:no space\r\ndata:  two spaces\r\n\r\n"  # CRLF, multi-line data
    "id: 2\revent: leader.begin\rdata: x\r\r"  # CR alone
    "event: ignored-no-data\n\n"
    "retry: soon\nid\ndata: y\n\n"  # bad retry ignored; empty id resets
    "id: a\x00b\ndata: z\n\n"  # an id with NUL is ignored
    "id: 9\ndata: cut off"
).encode("utf-8")

WANT = [
    Message("1", True, "reset", '{"a":1}'),
    Message("1", False, "message", "no space\n two spaces"),
    Message("2", True, "leader.begin", "x"),
    Message("", True, "message", "y"),
    Message("", False, "message", "z"),
]


def parse(chunks):
    p = SSEParser()
    out = []
    for c in chunks:
        out.extend(p.feed(c))
    return out, p


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(STREAM)])
def test_parser_follows_the_standard_in_chunks_of_any_size(size):
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    got, p = parse(chunks)
    assert got == WANT
    assert p.retry == 1.5


def test_parser_splits_at_random_points():
    rnd = random.Random(7)
    for _ in range(200):
        cuts = sorted(rnd.sample(range(1, len(STREAM)), rnd.randint(1, 12)))
        chunks = [STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(STREAM)])]
        assert parse(chunks)[0] == WANT


def test_a_crlf_split_between_chunks_is_one_line_end():
    got, _ = parse([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert got == [Message("", False, "message", "a\nb")]


def test_the_last_event_id_is_kept_from_the_start():
    p = SSEParser("41")
    assert p.feed(b"data: x\n\n") == [Message("41", False, "message", "x")]


def test_a_line_longer_than_the_bound_is_refused():
    p = SSEParser()
    with pytest.raises(SSEError):
        for _ in range(MAX_LINE // 65536 + 2):
            p.feed(b"d" * 65536)


def test_invalid_utf8_is_replaced_not_raised():
    got, _ = parse([b"data: \xff\xfe\n\n"])
    assert got == [Message("", False, "message", "\ufffd\ufffd")]
