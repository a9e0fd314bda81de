"""A fixed-bucket latency histogram the core keeps without a metrics library (the web layer
exports it as a Prometheus histogram). Not thread-safe: the owner's lock guards it."""

from __future__ import annotations

import bisect
from typing import Final

__all__ = ["DEFAULT_BUCKETS_MS", "LatencyHistogram"]

#: Upper bounds in milliseconds (the last bucket, +Inf, is implicit).
DEFAULT_BUCKETS_MS: Final = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 1000.0)


class LatencyHistogram:
    def __init__(self, buckets_ms: tuple[float, ...] = DEFAULT_BUCKETS_MS) -> None:
        self.bounds = buckets_ms
        #: Observations per bucket (not cumulative); the last one is above every bound.
        self.counts = [0] * (len(buckets_ms) + 1)
        self.sum_ms = 0.0
        self.count = 0

    def observe(self, ms: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, ms)] += 1
        self.sum_ms += ms
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """(upper bound as Prometheus writes it, observations at or below it), +Inf last."""
        out: list[tuple[str, int]] = []
        running = 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts):
            running += count
            out.append((bound, running))
        return out
