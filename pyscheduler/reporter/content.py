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
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["FieldType", "GroupVersionKind", "ReportContent", "ReportField"]


class FieldType(IntEnum):
    """The protobuf enum's values: the top-level part of the target object."""

    SPEC = 0
    STATUS = 1
    METADATA = 2


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Kind={self.kind}" if self.group else f"{self.version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class ReportField:
    field_type: FieldType
    #: The target object's field, as the Go field is spelled (``Labels``, ``TopologyZone``).
    name: str
    #: The value, JSON.
    value: bytes


@dataclass(frozen=True, slots=True)
class ReportContent:
    gvk: GroupVersionKind
    fields: tuple[ReportField, ...]
