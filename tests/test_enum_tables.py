"""common.enums.member_table: the same member objects as the enum, read as plain attributes."""

from __future__ import annotations

import enum

import pytest

from pyscheduler.common.enums import member_table
from pyscheduler.objects.application_state import AppState
from pyscheduler.si.events import EventChangeDetail


def test_a_table_holds_every_member_itself() -> None:
    for enum_type in (AppState, EventChangeDetail):
        table = member_table(enum_type)
        for name, member in enum_type.__members__.items():
            assert getattr(table, name) is member
        assert not isinstance(table, enum.EnumMeta)


def test_a_table_reads_aliases_as_their_member_and_knows_no_other_name() -> None:
    class Colour(enum.Enum):
        RED = 1
        CRIMSON = 1  # an alias reads as its member, as on the enum

    table = member_table(Colour)
    assert table.CRIMSON is Colour.RED
    with pytest.raises(AttributeError):
        table.BLUE  # type: ignore[attr-defined]  # noqa: B018
