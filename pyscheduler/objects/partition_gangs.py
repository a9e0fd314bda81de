"""Gang scheduling in a partition: placeholder replacement and placeholder timeouts.

A gang member takes a placeholder's place in steps: the cycle starts the replacement
(:meth:`PartitionGangs.start_replacement`: the member holds room, the RM is asked to release
the placeholder), the RM confirms and the replacement finishes (the member becomes an
allocation, told to the RM as new), or it is undone (its node or placeholder went) or the
member withdrawn (its pod deleted first). A member larger than its placeholder releases it
instead (:meth:`PartitionGangs.release_incompatible`); an application's placeholder timer
releases the rest (:meth:`PartitionGangs._time_out_placeholders`). Which applications may
replace now is kept in ``gang_apps`` from the applications' own notifications.

:class:`PartitionGangs` adds these to :class:`~pyscheduler.objects.partition_base.PartitionBase`;
:class:`~pyscheduler.objects.partition.Partition` builds on it (its node removal, releases and
timers call them as its own methods). Callers hold the partition's lock.
"""

from __future__ import annotations

from pyscheduler.common.resources import go_string
from pyscheduler.objects.allocation import Allocation
from pyscheduler.objects.application import Application
from pyscheduler.objects.node import Node
from pyscheduler.objects.partition_base import PartitionBase
from pyscheduler.objects.partition_outbox import PLACEHOLDER_REPLACED, TIMEOUT, Released
from pyscheduler.objects.placeholders import (
    CANCEL_INCOMPATIBLE,
    RELEASE_ALLOCATED_ON_TIMEOUT,
    RELEASE_PENDING_ON_TIMEOUT,
    REPLACING,
)

__all__ = ["PartitionGangs"]


class PartitionGangs(PartitionBase):
    """A partition's placeholder replacement and timeouts (see the module docstring)."""

    def _replacement_readiness(self, app: Application) -> None:
        """An application's notification (``on_replacement_readiness``): it is in ``gang_apps``
        exactly while it may replace placeholders and is still this partition's."""
        if app.ready_for_replacement and self.applications.get(app.app_id) is app:
            self.gang_apps.setdefault(app.app_id)
        else:
            self.gang_apps.pop(app.app_id, None)

    def start_replacement(self, app: Application, real: Allocation, placeholder: Allocation, node: Node) -> None:
        """The cycle's replacement: ``real`` takes ``placeholder``'s place on ``node`` (on
        another node it holds that node's room at once; on the placeholder's node it uses the
        placeholder's), and the RM is asked to release the placeholder (PLACEHOLDER_REPLACED).
        Nothing else counts until the RM confirms. Caller holds the lock."""
        if node.node_id != placeholder.node_id:
            node.add_allocation(real)
        app.start_replacement(real, placeholder, node.node_id, node.instance_type)
        self.outbox.released.append(
            Released(app.app_id, placeholder.allocation_key, PLACEHOLDER_REPLACED, REPLACING + real.allocation_key))

    def _finish_replacement(self, app: Application, placeholder: Allocation) -> None:
        """The placeholder's release is confirmed: the placeholder leaves its node and its
        application, and its real member becomes an allocation, told to the RM as new. The
        queue keeps the placeholder's size less the difference when the member is smaller."""
        real = placeholder.replaced_by
        ph_node = self.nodes.get(placeholder.node_id)
        app.finish_replacement(placeholder, self._usage_removed(app), self._usage_added(app))
        if ph_node is not None:
            ph_node.remove_allocation(placeholder.allocation_key)
        # The placeholder's instance of its group's role ended there (role history: the group's
        # recent list then names the nodes a gang started again should get back).
        self._role_stopped(app, placeholder, failed=False)
        if real is None:
            return
        if real.node_id == placeholder.node_id and ph_node is not None:
            ph_node.add_allocation(real)
        self._role_landed(app, real, real.node_id)
        self.outbox.allocated.append(real)

    def _undo_replacement(self, app: Application, placeholder: Allocation) -> None:
        """A replacement under way that cannot complete: its real member leaves the node it
        held (another node than the placeholder's) and is pending again."""
        real = placeholder.replaced_by
        if real is None:
            return
        if real.node_id != placeholder.node_id:
            node = self.nodes.get(real.node_id)
            if node is not None:
                node.remove_allocation(real.allocation_key)
        app.undo_replacement(placeholder)

    def _withdraw_member(self, app: Application, key: str) -> bool:
        """The RM withdraws a gang member that is taking a placeholder's place (its pod was
        deleted before the placeholder's release was confirmed): it leaves the node it held and
        is forgotten; the placeholder, already released, goes when the RM confirms. Returns
        whether ``key`` was such a member."""
        for placeholder in app.placeholders():
            member = placeholder.replaced_by
            if member is not None and member.allocation_key == key:
                if member.node_id != placeholder.node_id:
                    node = self.nodes.get(member.node_id)
                    if node is not None:
                        node.remove_allocation(key)
                placeholder.replaced_by = None
                member.replacing = None
                member.unplace()
                self.events.app.ask_removed(app.app_id, key, member.resource)
                return True
        return False

    def release_incompatible(self, app: Application, placeholder: Allocation, real: Allocation) -> None:
        """A real member larger than its group's placeholder: the placeholder goes (TIMEOUT,
        counted timed out once the RM confirms) and a request event says why. Caller holds the
        lock."""
        placeholder.released = True
        self.outbox.released.append(Released(app.app_id, placeholder.allocation_key, TIMEOUT, CANCEL_INCOMPATIBLE))
        self.events.app.request_diagnostic(
            placeholder.allocation_key, app.app_id,
            f"Task group '{placeholder.task_group_name}' in application '{app.app_id}': allocation resources "
            f"'{go_string(real.resource)}' are not matching placeholder '{go_string(placeholder.resource)}' "
            f"allocation with ID '{placeholder.allocation_key}'", real.resource)

    def _time_out_placeholders(self, app: Application) -> None:
        """The application's placeholder timer fired (see Application.time_out_placeholders):
        its releases go to the RM, the removed asks lose their reservations."""
        allocations, pending = app.time_out_placeholders()
        for ask in pending:
            self.unreserve(ask.allocation_key)
            self._role_ask_removed(app, ask)
        self.outbox.released.extend(
            Released(app.app_id, a.allocation_key, TIMEOUT, RELEASE_ALLOCATED_ON_TIMEOUT) for a in allocations)
        self.outbox.released.extend(
            Released(app.app_id, a.allocation_key, TIMEOUT, RELEASE_PENDING_ON_TIMEOUT) for a in pending)
