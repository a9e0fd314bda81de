"""common.histogram: observations land in the first bucket whose bound holds them."""

from __future__ import annotations

from pyscheduler.common.histogram import LatencyHistogram


def test_cumulative_buckets_as_prometheus_writes_them() -> None:
    h = LatencyHistogram((1.0, 5.0))
    for ms in (0.5, 1.0, 3.0, 7.0):
        h.observe(ms)
    assert h.cumulative() == [("1.0", 2), ("5.0", 3), ("+Inf", 4)]
    assert h.count == 4 and h.sum_ms == 11.5
