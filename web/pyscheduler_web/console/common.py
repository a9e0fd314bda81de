"""What every console page uses: the blueprint, the security headers, HTML error pages, the
partition selector and the formatting of quantities.

Every answer of the blueprint (pages, the stylesheet, errors) carries
:data:`SECURITY_HEADERS`: a ``Content-Security-Policy`` that allows this origin's stylesheet and
nothing else (no script, no inline style, no frame, forms only to this origin), ``nosniff``,
no referrer, no framing. Handlers raise the API's errors (:class:`~pyscheduler.dao.DAOError`,
:class:`~pyscheduler_web.http.HTTPError`); here they become an HTML page with the same status
and message instead of the API's JSON body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from flask import Blueprint, Response, render_template, request

from pyscheduler import dao
from pyscheduler.dao.errors import DAOError
from pyscheduler_web.blueprints.common import ctx, service
from pyscheduler_web.http import HTTPError

__all__ = [
    "SECURITY_HEADERS",
    "PartitionChoice",
    "bp",
    "ctx",
    "dao",
    "fmt_quantity",
    "percent",
    "render_page",
    "selected_partition",
    "service",
]

bp = Blueprint("console", __name__, template_folder="templates", static_folder="static",
               static_url_path="/ui/static")

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

#: The pages, in the navigation's order: (endpoint, title).
PAGES: Final = (
    ("console.queues_page", "Queues"),
    ("console.pending_page", "Pending"),
    ("console.nodes_page", "Nodes"),
    ("console.events_page", "Events"),
    ("console.roles_page", "Role history"),
    ("console.reporters_page", "Reporters"),
)


@bp.after_request
def _secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def _error_page(status: int, message: str) -> Response:
    response = Response(render_template("console/error.html", status=status, message=message,
                                        pages=PAGES, choices=[], partition=""), status=status)
    response.headers["Content-Type"] = "text/html; charset=utf-8"
    return response


@bp.errorhandler(DAOError)
def _dao_failed(err: DAOError) -> Response:
    return _error_page(err.status, err.message)


@bp.errorhandler(HTTPError)
def _http_failed(err: HTTPError) -> Response:
    return _error_page(err.status, err.message)


# -- partitions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionChoice:
    #: ``[clusterId]name``: always names one partition.
    qualified: str
    #: What a person reads: the plain name while one cluster is served, else the qualified one.
    label: str


def partition_choices() -> list[PartitionChoice]:
    listed = dao.partitions(ctx())
    several = len({p.get("clusterId", "") for p in listed}) > 1
    choices = []
    for p in listed:
        qualified = f"[{p.get('clusterId', '')}]{p['name']}"
        choices.append(PartitionChoice(qualified, qualified if several else p["name"]))
    return choices


def selected_partition(choices: list[PartitionChoice]) -> str:
    """The ``partition`` query parameter as given (the query functions resolve and check it),
    else the first partition's qualified name; "" when there is none."""
    asked = request.args.get("partition", "")
    if asked:
        return asked
    return choices[0].qualified if choices else ""


def render_page(template: str, **values: Any) -> Response:
    response = Response(render_template(template, pages=PAGES, endpoint=request.endpoint, **values))
    response.headers["Content-Type"] = "text/html; charset=utf-8"
    return response


# -- formatting --------------------------------------------------------------------------------

_GIB: Final = 1 << 30
_MIB: Final = 1 << 20


def fmt_quantity(resource: str, value: int) -> str:
    """A quantity in a person's units: vcore in cores (the API's are millicores), memory in GiB
    or MiB (the API's are bytes), anything else as the integer it is."""
    if resource == "vcore":
        return f"{value / 1000:.1f}" if value % 1000 else str(value // 1000)
    if resource in ("memory", "ephemeral-storage"):
        if abs(value) >= _GIB:
            return f"{value / _GIB:.1f} GiB"
        return f"{value / _MIB:.0f} MiB"
    return str(value)


def percent(part: int, whole: int) -> int:
    """``part`` of ``whole`` in whole percent, clamped to 0..100 (0 for no whole)."""
    if whole <= 0:
        return 0
    return max(0, min(100, (part * 100) // whole))


@bp.app_template_filter("qty")
def _qty_filter(value: int, resource: str) -> str:
    return fmt_quantity(resource, value)
