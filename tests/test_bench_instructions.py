"""``python -m benchmarks.instructions``: the instruction count per allocation under valgrind
(the deterministic figure of issue 17's steps) on a tiny shape, and its refusals."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys


def test_counts_instructions_per_allocation_or_says_valgrind_is_missing() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.instructions", "--nodes", "20", "--asks", "60"],
                          capture_output=True, text=True, timeout=300, check=False)
    if shutil.which("valgrind") is None:  # a machine without valgrind: a clear refusal, not a crash
        assert done.returncode == 2 and "valgrind is not installed" in done.stderr, done.stderr
        return
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.search(r"many-queues, fair, 20 nodes, 60 asks: ([0-9,]+) instructions per allocation", done.stdout)
    assert found is not None, done.stdout
    # An allocation costs some ten thousand instructions or more in Python, and not billions.
    assert 10_000 < int(found.group(1).replace(",", "")) < 100_000_000


def test_refuses_bad_sizes_and_baselines() -> None:
    for args, says in ((["--nodes", "0"], "must be positive"), (["--baseline", "/nonexistent"], "no pyscheduler package")):
        done = subprocess.run([sys.executable, "-m", "benchmarks.instructions", *args],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2 and says in done.stderr, done.stderr
