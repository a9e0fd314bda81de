"""``ChunkedBodyScanner``: the end of a chunked body, found as its bytes arrive in any pieces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler_web.chunked_scan import MAX_LINE, ChunkedBodyScanner


def _body(chunks: list[bytes], trailers: list[bytes]) -> bytes:
    framed = b"".join(b"%X\r\n%s\r\n" % (len(c), c) for c in chunks if c)
    return framed + b"0\r\n" + b"".join(t + b"\r\n" for t in trailers) + b"\r\n"


def _first_complete(data: bytes, cuts: list[int], start: int = 0) -> int | None:
    """The length of the prefix at which the scanner first says complete, fed in pieces."""
    scanner = ChunkedBodyScanner(start)
    for end in sorted({*cuts, len(data)}):
        if scanner.scan(data[:end]):
            return end
    return None


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=64), max_size=6),
    trailers=st.lists(st.from_regex(rb"\AX-[a-z]{1,8}: [a-z0-9]{0,8}\Z", fullmatch=True), max_size=3),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=12),
    prefix=st.binary(max_size=16),
)
def test_complete_exactly_when_the_trailer_section_ends(
    chunks: list[bytes], trailers: list[bytes], cuts: list[int], prefix: bytes
) -> None:
    # Chunk data may hold anything, "\r\n0\r\n\r\n" included; the head before it is skipped.
    data = prefix + _body(chunks, trailers)
    assert _first_complete(data, [len(prefix) + c for c in cuts], start=len(prefix)) == len(data)


def test_a_last_chunk_inside_the_data_does_not_end_the_body() -> None:
    data = _body([b"\r\n0\r\n\r\n", b"rest"], [])
    scanner = ChunkedBodyScanner(0)
    assert not scanner.scan(data[:-1])
    assert scanner.scan(data)


def test_malformed_framing_ends_the_scan_for_the_parser_to_answer() -> None:
    for bad in (b"zz\r\n", b"-5\r\n", b"0x5\r\n", b"\r\n", b"5" * (MAX_LINE + 10)):
        assert ChunkedBodyScanner(0).scan(bad), bad
    # A size with an extension is fine, and a body not yet complete is not an error.
    assert not ChunkedBodyScanner(0).scan(b"5;name=value\r\nab")


def test_declared_adds_up_the_chunk_sizes_as_their_size_lines_arrive() -> None:
    # Issue 31 (N6): a size past any limit is known before a byte of its data arrives.
    scanner = ChunkedBodyScanner(0)
    assert not scanner.scan(b"4\r\nabcd\r\nFFFFFFFFFFFFFFFFFF\r\nxy")
    assert scanner.declared == 4 + 0xFFFFFFFFFFFFFFFFFF
