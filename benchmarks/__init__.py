"""Benchmarks for pyscheduler: programs that measure, never tests that fail on a timing.

Run them with ``python -m benchmarks`` (``make bench``). Each benchmark family
prints tables with absolute figures next to ratios measured in the same run, and can
write machine-readable results with ``--json``. What is measured, and against which
reference figures, is described in ``shared/spec/benchmarks.md``.
"""
