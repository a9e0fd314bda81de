"""What a reporter plugin reports: Katalyst's ``ReportContent`` model, as plain data.

A plugin's answer is a list of :class:`ReportContent`, each naming the kind of object it is about
(:class:`GroupVersionKind`) and carrying fields: a :class:`FieldType` (the top-level part of the
object: spec, status or metadata), the field's name as the object's Go field is spelled
(``Labels``, ``ReclaimedResourceCapacity``, ``TopologyZone``) and its value as JSON bytes. These
mirror the protobuf messages of Katalyst's ``ReporterPlugin`` gRPC service field for field, so a
socket plugin's response converts one to one.

Here the manager runs beside the scheduler core rather than on the node, so a report also says
which node it is about: an in-process plugin returns content per node id; a socket plugin is
bound to the node it registered for.

The three value types are named tuples rather than dataclasses: the manager compares every
plugin's answer with its previous one on every round (thousands of nodes), and tuples compare
and hash in C.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

__all__ = ["FieldType", "GroupVersionKind", "ReportContent", "ReportField"]


class FieldType(IntEnum):
    """The protobuf enum's values: the top-level part of the target object."""

    SPEC = 0
    STATUS = 1
    METADATA = 2


class GroupVersionKind(NamedTuple):
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Kind={self.kind}" if self.group else f"{self.version}, Kind={self.kind}"


class ReportField(NamedTuple):
    field_type: FieldType
    #: The target object's field, as the Go field is spelled (``Labels``, ``TopologyZone``).
    name: str
    #: The value, JSON.
    value: bytes


class ReportContent(NamedTuple):
    gvk: GroupVersionKind
    fields: tuple[ReportField, ...]
