"""An application's members in slices (issue 34: ``pyscheduler.io/topology-slice-required`` and
``-slice-size``, :mod:`pyscheduler.policies.topology_tags`): plain bookkeeping the cycle keeps on
the application, under the partition's lock."""

from __future__ import annotations

__all__ = ["Slices"]


class Slices:
    """An application's members in slices of ``size`` (each member's slice given the first time
    it is tried: the first slice not full), and the domain of the slice level each slice is
    placed in (by its first member placed)."""

    __slots__ = ("size", "of_member", "counts", "placed", "domains")

    def __init__(self, size: int) -> None:
        self.size = size
        #: Member (ask key) -> its slice.
        self.of_member: dict[str, int] = {}
        #: Members given to each slice.
        self.counts: list[int] = []
        #: Members placed, per slice.
        self.placed: dict[int, int] = {}
        #: Slice -> the value of its domain at the slice level.
        self.domains: dict[int, str] = {}

    def slice_of(self, key: str) -> int:
        index = self.of_member.get(key)
        if index is None:
            index = next((i for i, count in enumerate(self.counts) if count < self.size), len(self.counts))
            if index == len(self.counts):
                self.counts.append(0)
            self.counts[index] += 1
            self.of_member[key] = index
        return index

    def remaining(self, index: int) -> int:
        """The slice's members not placed yet."""
        return self.counts[index] - self.placed.get(index, 0) if index < len(self.counts) else 0

    def landed(self, key: str, value: str) -> None:
        """The member ``key`` was placed on a node of the slice level's domain ``value``."""
        index = self.of_member.get(key)
        if index is None:
            return
        self.placed[index] = self.placed.get(index, 0) + 1
        self.domains.setdefault(index, value)
