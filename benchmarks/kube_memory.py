"""A contender's peak memory (:mod:`benchmarks.kubernetes`): the summed VmHWM of the processes
of its process group (pyscheduler: gunicorn's master and workers; kube-scheduler: one process),
read from ``/proc/<pid>/status`` every :data:`INTERVAL` seconds while it runs.

VmHWM is each process's own resident high-water mark, so a peak between two samples is not
missed; what a sample cannot see is a process that starts and ends between two samples. The sum
over processes is an upper bound of the group's simultaneous peak: each process's peak counted
at once, and pages a forked worker still shares with its master counted in both.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

INTERVAL = 0.5


def group_high_water_kib(group: int) -> dict[int, int]:
    """pid -> VmHWM (KiB) of every live process whose process group is ``group``."""
    marks: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            if int(fields[2]) != group:
                continue
            status = (stat.parent / "status").read_text()
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                marks[int(stat.parent.name)] = int(line.split()[1])
    return marks


class PeakMemory:
    """Samples a process group's VmHWM (module doc) in a thread from :meth:`follow` until
    :meth:`stop`; :attr:`peak_mib` the sum of each process's highest mark seen."""

    def __init__(self) -> None:
        self._marks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def follow(self, process: subprocess.Popen[bytes] | None) -> None:
        """Samples ``process``'s group (a session of its own) from now on; None: nothing to sample."""
        if process is None or self._thread is not None:
            return
        self._process = process
        self.sample()
        self._thread = threading.Thread(target=self._run, name="bench-peak-memory", daemon=True)
        self._thread.start()

    def sample(self) -> None:
        if self._process is None:
            return
        for pid, kib in group_high_water_kib(self._process.pid).items():
            self._marks[pid] = max(kib, self._marks.get(pid, 0))

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            self.sample()

    def stop(self) -> None:
        """One last sample (call it before the process is stopped), then the thread ends."""
        self.sample()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    @property
    def peak_mib(self) -> float | None:
        return sum(self._marks.values()) / 1024 if self._marks else None
