"""Exact ports of the Go ``strconv`` parsers that YuniKorn uses for its settings.

YuniKorn reads its flat "extra config" map with ``strconv.ParseBool`` and
``strconv.ParseUint(s, 10, bitSize)``. Python's ``int()`` and truthiness rules
accept many spellings Go rejects (``" 12"``, ``"+1"``, ``"1_000"``, Arabic-Indic
digits, ``"yes"``...), so a configuration that works here would fail on
YuniKorn or the other way round. These functions accept exactly what Go
accepts and raise errors whose text matches Go's ``NumError`` byte for byte.
"""

from __future__ import annotations

import unicodedata

from pyscheduler.common.errors import SchedulerValueError

__all__ = ["ERR_RANGE", "ERR_SYNTAX", "NumError", "go_quote", "parse_bool", "parse_uint"]

#: Text of Go's ``strconv.ErrSyntax``.
ERR_SYNTAX = "invalid syntax"
#: Text of Go's ``strconv.ErrRange``.
ERR_RANGE = "value out of range"

_TRUE_SPELLINGS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE_SPELLINGS = frozenset({"0", "f", "F", "FALSE", "false", "False"})

# Go's strconv.Quote uses these short escapes for the C0 controls it knows.
_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


class NumError(SchedulerValueError):
    """Port of Go's ``*strconv.NumError``: a failed conversion.

    ``func`` is the Go function name (``"ParseBool"``, ``"ParseUint"``),
    ``num`` the rejected input and ``err`` the reason text
    (:data:`ERR_SYNTAX`, :data:`ERR_RANGE`, or a bit size complaint).
    """

    func: str
    num: str
    err: str

    def __init__(self, func: str, num: str, err: str) -> None:
        self.func = func
        self.num = num
        self.err = err
        super().__init__(f"strconv.{func}: parsing {go_quote(num)}: {err}")

    def __reduce__(self) -> tuple[object, ...]:
        # The default exception pickling replays args (the message) into
        # __init__, which takes three arguments.
        return (NumError, (self.func, self.num, self.err))


def go_quote(s: str) -> str:
    """Return ``s`` quoted the way Go's ``strconv.Quote`` does.

    Printable characters (Unicode letters, marks, numbers, punctuation,
    symbols and the ASCII space, which is what both Go's ``unicode.IsPrint``
    and Python's ``str.isprintable`` mean) are kept; everything else is
    escaped with Go's lowercase ``\\x``, ``\\u`` or ``\\U`` forms.
    """
    return '"' + "".join(_quote_char(c) for c in s) + '"'


def _quote_char(c: str) -> str:
    """Escape one character as Go's ``appendEscapedRune`` does for ``"`` quoting."""
    if c in ('"', "\\"):
        return "\\" + c
    if c.isprintable():
        return c
    short = _SHORT_ESCAPES.get(c)
    if short is not None:
        return short
    code = ord(c)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if unicodedata.category(c) == "Cs":
        # A Go string cannot hold a lone surrogate; Go quotes invalid runes
        # as the replacement character.
        return "\\ufffd"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def parse_bool(s: str) -> bool:
    """Port of Go's ``strconv.ParseBool``.

    Accepts exactly ``1 t T TRUE true True`` and ``0 f F FALSE false False``;
    anything else (including surrounding spaces, ``yes`` or ``on``) raises
    :class:`NumError` with ``invalid syntax``.
    """
    if s in _TRUE_SPELLINGS:
        return True
    if s in _FALSE_SPELLINGS:
        return False
    raise NumError("ParseBool", s, ERR_SYNTAX)


def parse_uint(s: str, bit_size: int = 32) -> int:
    """Port of Go's ``strconv.ParseUint(s, 10, bit_size)``.

    Only a non-empty run of ASCII digits is accepted: no sign, no spaces, no
    underscores (Go allows those only with base 0), no base prefix and no
    non-ASCII digits. A ``bit_size`` of 0 means 64, Go's ``IntSize``.

    As in Go, the scan stops at the first digit that makes the value exceed
    ``2**bit_size - 1``, so ``"99999999999x"`` is out of range rather than
    invalid syntax.
    """
    if bit_size == 0:
        bit_size = 64
    elif not 0 < bit_size <= 64:
        raise NumError("ParseUint", s, f"invalid bit size {bit_size}")
    if s == "":
        raise NumError("ParseUint", s, ERR_SYNTAX)
    max_val = (1 << bit_size) - 1
    n = 0
    for c in s:
        # An explicit range test: str.isdigit() and int() also accept
        # non-ASCII digits, which Go rejects.
        if not "0" <= c <= "9":
            raise NumError("ParseUint", s, ERR_SYNTAX)
        n = n * 10 + (ord(c) - 0x30)
        if n > max_val:
            raise NumError("ParseUint", s, ERR_RANGE)
    return n
