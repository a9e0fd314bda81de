"""Where a chunked request body ends, followed as its bytes arrive (RFC 9112, section 7.1).

The serving worker gathers a request's body in its main loop before a pool thread serves it
(:mod:`pyscheduler_web.worker`); for a chunked body that means knowing when the last chunk
**and the trailer section after it** are in. Searching the bytes for ``0\\r\\n\\r\\n`` misses a
body with trailers (it then waited for the body deadline) and can stop early inside chunk
data. :class:`ChunkedBodyScanner` follows the framing instead: size line, data, CRLF, ...,
the zero-size chunk, trailer lines up to an empty one.

It only finds the end. Anything malformed (a size that is not hex, a size or trailer line
longer than :data:`MAX_LINE`) ends the scan at once: the request is then handed to gunicorn's
parser, which answers it with a 400. It also adds up the sizes the chunks declare
(:attr:`ChunkedBodyScanner.declared`) as soon as their size lines arrive, so that a body
announced past the service's limit (``FFFFFFFFFFFFFFFFFF``) is refused at once rather than
waited for.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_LINE", "ChunkedBodyScanner"]

#: Longest chunk-size or trailer line followed (extensions included).
MAX_LINE: Final = 8192
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")


class ChunkedBodyScanner:
    """Follows one chunked body in a growing buffer, from offset ``start``."""

    __slots__ = ("_pos", "_state", "_left", "declared")

    def __init__(self, start: int) -> None:
        self._pos = start
        self._state = "size"  # "size", "data" (with its CRLF), "trailer"
        self._left = 0
        #: The sum of the chunk sizes read so far (data that may not have arrived yet).
        self.declared = 0

    def scan(self, buf: bytes | bytearray) -> bool:
        """True once the body is complete (or malformed) in ``buf``; call again as it grows."""
        while True:
            if self._state == "data":
                available = len(buf) - self._pos
                if available < self._left:
                    self._pos += available
                    self._left -= available
                    return False
                self._pos += self._left
                self._state = "size"
                continue
            eol = buf.find(b"\r\n", self._pos, self._pos + MAX_LINE + 2)
            if eol < 0:
                return len(buf) - self._pos > MAX_LINE  # an endless line: malformed
            line = bytes(buf[self._pos : eol])
            self._pos = eol + 2
            if self._state == "trailer":
                if not line:
                    return True
                continue
            size = line.split(b";", 1)[0].strip(b" \t")
            if not size or not _HEX.issuperset(size):
                return True  # malformed: gunicorn's parser answers it
            n = int(size, 16)
            self.declared += n
            if n == 0:
                self._state = "trailer"
            else:
                self._state, self._left = "data", n + 2  # the data and its CRLF
