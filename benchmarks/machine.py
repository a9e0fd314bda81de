"""Machine facts for a benchmark report's header, and the report formatting helpers.

Benchmarks run on shared, noisy machines, so every report says where it ran (cores, CPU
model, memory, Python and Rust versions) next to its figures. The small helpers that print
a report (markdown tables, progress lines on stderr) live here too, beside the header.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from pyscheduler.common.text_table import format_table  # noqa: F401 - the benchmarks import it from here

UNKNOWN = "unknown"


@dataclass(frozen=True)
class MachineFacts:
    """Where a benchmark ran."""

    date: str
    hostname: str
    os: str
    cpu_count: int | None
    usable_cores: int | None
    cpu_model: str
    memory_total_bytes: int | None
    python: str
    rustc: str
    pyscheduler_version: str
    native_module: str
    load_average: tuple[float, float, float] | None
    """1/5/15-minute load at the start: a busy shared machine explains noisy figures."""
    allocator_env: dict[str, str]
    """MALLOC_* / PYTHONMALLOC settings: they change both memory and speed figures."""

    def to_dict(self) -> dict[str, Any]:
        """Return the facts as a JSON-serialisable dict."""
        return asdict(self)

    def header_lines(self) -> list[str]:
        """Return the facts as the lines of a report header."""
        memory = f"{self.memory_total_bytes / 2**30:.1f} GiB" if self.memory_total_bytes else UNKNOWN
        load = " / ".join(f"{x:.2f}" for x in self.load_average) if self.load_average else UNKNOWN
        allocator = ", ".join(f"{k}={v}" for k, v in self.allocator_env.items()) or "defaults"
        return [
            f"date: {self.date}",
            f"machine: {self.hostname}, {self.os}",
            f"cpu: {self.cpu_model}; {self.cpu_count} logical cores, {self.usable_cores} usable by this process",
            f"memory: {memory}",
            f"python: {self.python}",
            f"rustc: {self.rustc}",
            f"pyscheduler: {self.pyscheduler_version}; native module: {self.native_module}",
            f"load average at start: {load}",
            f"allocator settings: {allocator}",
        ]


def machine_facts() -> MachineFacts:
    """Collect the facts about this machine and this build of pyscheduler."""
    return MachineFacts(
        date=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        hostname=platform.node() or UNKNOWN,
        os=f"{platform.system()} {platform.release()} {platform.machine()}",
        cpu_count=os.cpu_count(),
        usable_cores=_usable_cores(),
        cpu_model=cpu_model(),
        memory_total_bytes=memory_total_bytes(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        rustc=rustc_version(),
        pyscheduler_version=pyscheduler_version(),
        native_module=native_module_path(),
        load_average=_load_average(),
        allocator_env=allocator_env(),
    )


def allocator_env() -> dict[str, str]:
    """Return the environment variables that tune glibc malloc or Python's allocator."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(("MALLOC_", "GLIBC_TUNABLES", "PYTHONMALLOC"))}


def _load_average() -> tuple[float, float, float] | None:
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def _usable_cores() -> int | None:
    # The affinity mask is what a containerised or pinned run can actually use.
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """Return the CPU model name from ``/proc/cpuinfo`` (or the platform's guess)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or UNKNOWN


def memory_total_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """Return the machine's total memory in bytes, from ``/proc/meminfo``."""
    try:
        with open(meminfo, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def rustc_version() -> str:
    """Return ``rustc --version``, or "unknown" when rustc is not available."""
    rustc = shutil.which("rustc")
    if rustc is None:
        return UNKNOWN
    try:
        done = subprocess.run([rustc, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else UNKNOWN


def pyscheduler_version() -> str:
    """Return the installed pyscheduler version (distribution metadata, else ``__version__``)."""
    from importlib import metadata

    try:
        return metadata.version("pyscheduler")
    except metadata.PackageNotFoundError:
        pass
    try:
        import pyscheduler

        return str(getattr(pyscheduler, "__version__", UNKNOWN))
    except ImportError:
        return UNKNOWN


def native_module_path() -> str:
    """Return the file and version of ``pyscheduler._native``, or why it cannot be imported."""
    try:
        import pyscheduler._native as native
    except ImportError as exc:
        return f"not importable ({exc})"
    version = getattr(native, "__version__", None)
    where = str(getattr(native, "__file__", "built in"))
    return f"{where} (version {version})" if version else where


# --- report formatting ------------------------------------------------------------------


def fmt_count(n: float) -> str:
    """Format an event count compactly: 9M, 3.5M, 20k, 512."""
    for factor, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= factor:
            value = n / factor
            return f"{value:.0f}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"
    return f"{n:.0f}"


def fmt_rate(per_second: float | None) -> str:
    """Format a rate in events per second (``12.3 M/s``)."""
    if per_second is None:
        return "-"
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f} k/s"
    return f"{per_second:.0f} /s"


def fmt_ratio(ratio: float | None) -> str:
    """Format a ratio (``12.3x``), or a dash when it was not measured."""
    return "-" if ratio is None else f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"


class Progress:
    """Progress lines on stderr, stamped with the time since the run started.

    Tables go to stdout; progress goes to stderr so that ``> results.md`` keeps only tables.
    """

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self._stream = stream
        self._enabled = enabled
        self._start = time.monotonic()

    def __call__(self, message: str) -> None:
        """Print one progress line."""
        if self._enabled:
            stream = self._stream if self._stream is not None else sys.stderr
            print(f"[{time.monotonic() - self._start:7.1f}s] {message}", file=stream, flush=True)
