"""What the service asks of a resource manager attached to it, and nothing else.

An RM talks to the core through the SI (``service.proxy``, the callback it registers); this
module is only the lifecycle and HTTP side of being *embedded* in a served process:

- :class:`AttachedRM`: an object with ``stop()``, which the service calls when it stops
  (attached RMs stop in reverse order of attachment).
- :class:`RoutedRM`: an attached RM that also declares HTTP endpoints with ``routes()``;
  the service asks once, when the RM is attached. A :class:`Route` is a GET answering JSON,
  declared without any web framework: whatever serves the scheduler (the REST service in
  ``pyscheduler_web``) mounts it; without a web layer it is simply not served.
- :class:`MeasuredRM`: an attached object that declares Prometheus metrics of its own with
  ``metrics()`` (:class:`RMMetric`, plain data: no metrics library), asked at every scrape;
  whatever serves the scheduler exports them (``pyscheduler_web`` on ``/ws/v1/metrics``).
- :data:`Attach`: the function that attaches an RM (``pyscheduler serve --rm module:callable``
  names one): it gets the service, registers its RM through ``service.proxy`` and returns
  the RM (or None when there is nothing to stop).

This module imports no part of the core, so an RM package (the Kubernetes shim) may import
it at run time without depending on the scheduler's internals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:
    from pyscheduler.service.entrypoint import SchedulerService

__all__ = ["Attach", "AttachedRM", "MeasuredRM", "RMMetric", "Route", "RoutedRM"]

#: A route name: what a web layer builds its endpoint name from (letters, digits, ``_``, ``-``).
_ROUTE_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Route:
    """``GET rule`` answers ``view()`` as a JSON object.

    ``rule`` is an absolute path without variables (``/ws/v1/k8s/leadership``); ``name``
    tells the RM's routes apart (unique within one RM). ``view`` runs on a request thread,
    so it must be safe to call concurrently with the RM's own threads.
    """

    rule: str
    name: str
    view: Callable[[], Mapping[str, object]]

    def __post_init__(self) -> None:
        if not self.rule.startswith("/") or "<" in self.rule or "//" in self.rule:
            raise ValueError(f"route {self.name!r}: {self.rule!r} is not an absolute path without variables")
        if not _ROUTE_NAME.fullmatch(self.name):
            raise ValueError(f"route name {self.name!r}: letters, digits, '_' and '-' only")


@runtime_checkable
class AttachedRM(Protocol):
    """An RM the service stops when it stops."""

    def stop(self) -> None: ...


@runtime_checkable
class RoutedRM(AttachedRM, Protocol):
    """An attached RM with HTTP endpoints of its own (asked once, at attach)."""

    def routes(self) -> Sequence[Route]: ...


@dataclass(frozen=True)
class RMMetric:
    """One metric family an RM exports, as plain data (see :class:`MeasuredRM`).

    ``name`` is the family's name as Prometheus shows it, without the ``_total`` a counter's
    sample gets; ``labels`` the label names, the same for every series. A counter or gauge has
    ``values``: (label values, value) per series. A histogram has ``histograms``: (label values,
    cumulative buckets as (upper bound as Prometheus writes it, observations at or below it)
    ending with ``"+Inf"``, sum of the observations) per series, as
    :meth:`pyscheduler.common.histogram.LatencyHistogram.cumulative` gives them.
    """

    name: str
    kind: Literal["counter", "gauge", "histogram"]
    doc: str
    labels: tuple[str, ...] = ()
    values: tuple[tuple[tuple[str, ...], float], ...] = ()
    histograms: tuple[tuple[tuple[str, ...], tuple[tuple[str, int], ...], float], ...] = ()


@runtime_checkable
class MeasuredRM(Protocol):
    """An attached object with metrics of its own: ``metrics()`` runs on the scraping request's
    thread at every scrape, so it must be cheap and safe to call concurrently with the RM's own
    threads. Its label values must come from a bounded set (no pod or node names)."""

    def metrics(self) -> Sequence[RMMetric]: ...


#: Attaches an RM to a service (see the module doc); an exception fails the attach.
Attach: TypeAlias = "Callable[[SchedulerService], AttachedRM | None]"
