"""The plain values workloads are made of: units, the error, sampled ranges and generated plans.

Everything else in the simulator's workload modules imports these; they import nothing of the
simulator. :class:`IntRange` and :class:`FloatRange` are the spec's sampled ranges (a constant
draws nothing from the random stream); :class:`AskPlan` and :class:`AppPlan` are what a spec
generates (:meth:`~pyscheduler.sim.workload.WorkloadSpec.generate`) and the simulated RM plays.
Quantities are the SI's: memory in bytes, vcore in millicores.

The workload modules, bottom up: this one; :mod:`~pyscheduler.sim.workload_format` (reading and
writing the file format's values); :mod:`~pyscheduler.sim.workload_sections` (the optional
services, late tenant and gang sections); :mod:`~pyscheduler.sim.workload` (the spec, its
generation, file loading and the presets).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Final

from pyscheduler.common.errors import SchedulerValueError

__all__ = [
    "ARRIVAL_PATTERNS",
    "AppPlan",
    "AskPlan",
    "FloatRange",
    "GIB",
    "INT32_MAX",
    "IntRange",
    "MIB",
    "QUEUE_NAME",
    "WorkloadError",
]

MIB: Final = 1 << 20
GIB: Final = 1 << 30

#: How applications arrive: all at once, evenly spaced at ``rate`` per second, or as a
#: Poisson process of ``rate`` per second (exponential gaps). The first one arrives at 0.
ARRIVAL_PATTERNS: Final = ("burst", "uniform", "poisson")

#: A queue path element, as queues.yaml allows it (lower-cased by the core anyway).
QUEUE_NAME = re.compile(r"^[a-z0-9_-]{1,64}$")


class WorkloadError(SchedulerValueError):
    """A workload description that cannot be used; the message names the key and the problem."""


#: The largest value of an SI int32 field (priorities).
INT32_MAX: Final = (1 << 31) - 1


# -- ranges ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntRange:
    """An inclusive range of integers, sampled uniformly (``low == high``: a constant)."""

    low: int
    high: int

    def sample(self, rng: random.Random) -> int:
        """One value drawn from ``rng``. A constant draws nothing, so it never shifts the stream."""
        return self.low if self.low == self.high else rng.randint(self.low, self.high)

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def to_json(self) -> int | list[int]:
        """The file-format value: a number for a constant, else ``[low, high]``."""
        return self.low if self.low == self.high else [self.low, self.high]


@dataclass(frozen=True)
class FloatRange:
    """An inclusive range of seconds, sampled uniformly and rounded to the millisecond
    (readable, and the same on every platform's float formatting)."""

    low: float
    high: float

    def sample(self, rng: random.Random) -> float:
        """One value drawn from ``rng``. A constant draws nothing, so it never shifts the stream."""
        return self.low if self.low == self.high else round(rng.uniform(self.low, self.high), 3)

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    def to_json(self) -> float | list[float]:
        """The file-format value: a number for a constant, else ``[low, high]``."""
        return self.low if self.low == self.high else [self.low, self.high]


# -- the generated workload ------------------------------------------------------------------


@dataclass(frozen=True)
class AskPlan:
    """One ask of a generated application: its key, size and how long its allocation runs;
    for a service's instance, its role."""

    key: str
    memory: int
    vcore: int
    run_time: float
    role: str = ""


@dataclass(frozen=True)
class AppPlan:
    """One generated application: submitted with all its asks at ``arrival`` (seconds)."""

    app_id: str
    queue: str
    #: Seconds from the start; for a service's later incarnation (``after`` set), seconds
    #: after the previous incarnation was removed.
    arrival: float
    priority: int
    asks: tuple[AskPlan, ...]
    #: A service's incarnation: its role history key, the application it follows, and its
    #: number (0: the first submission).
    history_key: str = ""
    after: str = ""
    generation: int = 0
    #: The late tenant's applications: their asks may preempt others (the SI's
    #: ``PreemptionPolicy(allow_preempt_self=True, allow_preempt_other=True)``).
    may_preempt: bool = False
    #: A gang job (the ``gangs`` section): its asks are the members of one task group, placed
    #: through placeholders; the placeholder timeout (seconds) and style (Soft or Hard).
    task_group: str = ""
    gang_timeout: float = 0.0
    gang_style: str = ""
