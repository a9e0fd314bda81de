"""The metric names a Grafana dashboard's PromQL reads, found by a small tokenizer (the check
that every one of them is exported is tests/test_dashboard_metrics.py).

What is not a metric name is skipped: strings, numbers and durations, range and subquery
brackets (``[5m]``, ``[$__rate_interval]``, ``[1h:5m]``), label matchers inside ``{...}``,
label lists after ``by``/``without``/``on``/``ignoring``/``group_left``/``group_right``, the
keywords and binary operators spelled as words, Grafana's variables (``$queue``,
``${datasource}``) and every function or aggregation (an identifier followed by ``(``, which
must be one PromQL knows: an unknown one is an error, as it would be in Prometheus). A
template variable's ``label_values(expr, label)`` reads only ``expr``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

__all__ = ["dashboard_expressions", "metric_names", "missing_names"]

#: PromQL's functions and aggregation operators (Prometheus 2.x/3.x).
FUNCTIONS: Final = frozenset("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp clamp_max clamp_min
cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month deg delta deriv exp floor
histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum
holt_winters double_exponential_smoothing hour idelta increase irate label_join label_replace last_over_time ln
log10 log2 mad_over_time max_over_time min_over_time minute month pi predict_linear present_over_time
quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_by_label sort_by_label_desc sort_desc sqrt
stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year
sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
""".split())
#: Words that are PromQL syntax, not names.
KEYWORDS: Final = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
                             "unless", "offset", "inf", "nan", "start", "end", "atan2"})
_LABEL_LISTS: Final = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<variable>\$\{[^}]*\}|\$[A-Za-z0-9_]+)
  | (?P<number>(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?:ms|[smhdwy])?(?:\d+(?:ms|[smhdwy]))*)
  | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<punct>[(){},@]|[-+*/%^]|==|!=|<=|>=|=~|!~|[<>=])
""", re.VERBOSE)


def _tokens(expr: str) -> Iterator[tuple[str, str]]:
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise ValueError(f"cannot read {expr[position:position + 20]!r} in {expr!r}")
        position = match.end()
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            yield kind, match.group()


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` reads (see the module doc)."""
    label_values = re.fullmatch(r"\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*", expr, re.DOTALL)
    if label_values:
        expr = label_values.group(1)
    tokens = list(_tokens(expr))
    names: set[str] = set()
    braces = 0  # inside a label matcher {...}
    label_list = 0  # paren depth of a by (...) / on (...) list, 0: not in one
    depth = 0
    for index, (kind, text) in enumerate(tokens):
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if kind == "punct":
            if text == "{":
                braces += 1
            elif text == "}":
                braces -= 1
            elif text == "(":
                depth += 1
            elif text == ")":
                if label_list and depth == label_list:
                    label_list = 0
                depth -= 1
            continue
        if kind != "name" or braces or label_list:
            continue
        if text in _LABEL_LISTS:
            if following == "(":
                label_list = depth + 1
            continue
        if text in KEYWORDS:
            continue
        if following in ("by", "without") and text in FUNCTIONS:
            continue  # an aggregation with its grouping first: sum by (le) (...)
        if following == "(":
            if text not in FUNCTIONS:
                raise ValueError(f"unknown PromQL function {text!r} in {expr!r}")
            continue
        names.add(text)
    if braces or depth:
        raise ValueError(f"unbalanced brackets in {expr!r}")
    return names


def dashboard_expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard: its panels' targets (rows' nested panels too) and
    its query variables."""
    found: list[str] = []

    def panels(items: list[dict[str, Any]]) -> None:
        for panel in items:
            found.extend(str(t["expr"]) for t in panel.get("targets") or () if t.get("expr"))
            panels(panel.get("panels") or [])

    panels(dashboard.get("panels") or [])
    for variable in (dashboard.get("templating") or {}).get("list") or ():
        if variable.get("type") == "query":
            query = variable.get("query")
            found.append(str(query.get("query") if isinstance(query, dict) else query))
    return found


def missing_names(dashboard_path: Path, exported: set[str]) -> dict[str, list[str]]:
    """Each metric name the dashboard reads that is not among ``exported`` (the scrape's sample
    names: a counter's ``_total``, a histogram's ``_bucket``/``_sum``/``_count``, as PromQL
    names them), with the expressions reading it."""
    dashboard = json.loads(dashboard_path.read_text())
    missing: dict[str, list[str]] = {}
    for expr in dashboard_expressions(dashboard):
        for name in sorted(metric_names(expr) - exported):
            missing.setdefault(name, []).append(expr)
    return missing
