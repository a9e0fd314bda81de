"""Markdown tables for command output (``pyscheduler simulate``, the benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["format_table"]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """Return a markdown table (pasteable into docs/benchmarks.md).

    ``align`` holds one letter per column, ``l`` or ``r``; by default the first column is
    left-aligned and the others right-aligned (they are numbers).
    """
    if align is None:
        align = "l" + "r" * (len(headers) - 1)
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        padded = (c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=True))
        return "| " + " | ".join(padded) + " |"

    rules = ("-" * (w + 1) + ":" if a == "r" else "-" * (w + 2) for w, a in zip(widths, align, strict=True))
    rule = "|" + "|".join(rules) + "|"
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])
