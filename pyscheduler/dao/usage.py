"""User and group usage (YuniKorn's UserResourceUsageDAOInfo, GroupResourceUsageDAOInfo and
ResourceUsageDAOInfo): ``/partition/{p}/usage/users|user/{u}|groups|group/{g}``.

YuniKorn has one user/group manager for the whole scheduler and ignores the partition in these
paths; here each partition tracks its own, so the trackers of every partition are merged: the
same user in two partitions is one entry whose usage at each queue path is the sum. The
partition parameter is ignored, as upstream does.

Locks: each partition's lock, held only while its manager copies its usage (``usage_dao``, plain
values); the merge and the JSON come after. Nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyscheduler.dao._common import put, res_map, sorted_map, sorted_partitions
from pyscheduler.dao.errors import (
    GROUP_NAME_MISSING,
    GROUP_NOT_FOUND,
    INVALID_GROUP_NAME,
    INVALID_USER_NAME,
    USER_NAME_MISSING,
    USER_NOT_FOUND,
    BadRequest,
    NotFound,
)
from pyscheduler.policies.placement import GROUP_NAME_RE, USER_NAME_RE

if TYPE_CHECKING:
    from pyscheduler.scheduler.context import ClusterContext

__all__ = ["group", "groups", "user", "users"]


def _merge_tree(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two usage trees of the same user or group (from two partitions) as one."""
    usage = dict(a["resourceUsage"])
    for name, value in b["resourceUsage"].items():
        usage[name] = usage.get(name, 0) + value
    children = {c["queuePath"]: c for c in a["children"]}
    for child in b["children"]:
        path = child["queuePath"]
        children[path] = _merge_tree(children[path], child) if path in children else child
    return {
        "queuePath": a["queuePath"],
        "resourceUsage": usage,
        "runningApplications": sorted(set(a["runningApplications"]) | set(b["runningApplications"])),
        "maxResources": a["maxResources"] if a["maxResources"] is not None else b["maxResources"],
        "maxApplications": a["maxApplications"] or b["maxApplications"],
        "children": [children[path] for path in sorted(children)],
    }


def _tree_dao(node: dict[str, Any]) -> dict[str, Any]:
    """ResourceUsageDAOInfo with omitempty applied (resourceUsage is a non-nil pointer upstream,
    so it is always there)."""
    out: dict[str, Any] = {"queuePath": node["queuePath"], "resourceUsage": res_map(node["resourceUsage"])}
    put(out, "runningApplications", sorted(node["runningApplications"]))
    if node["maxResources"] is not None:
        put(out, "maxResources", res_map(node["maxResources"]))
    put(out, "maxApplications", node["maxApplications"])
    put(out, "children", [_tree_dao(c) for c in sorted(node["children"], key=lambda c: c["queuePath"])])
    return out


def _collect(ctx: ClusterContext, kind: str) -> dict[str, dict[str, Any]]:
    """Every tracked user (``kind="users"``) or group over all partitions, merged by name."""
    merged: dict[str, dict[str, Any]] = {}
    name_key = "userName" if kind == "users" else "groupName"
    for partition in sorted_partitions(ctx):
        with partition.lock:  # the manager's usage_dao copies its trees into plain values
            entries = partition.ugm.usage_dao()[kind]
        for entry in entries:
            name = entry[name_key]
            seen = merged.get(name)
            if seen is None:
                merged[name] = {**entry, "queues": entry["queues"]}
                continue
            if kind == "users":
                seen["groups"] = {**entry["groups"], **seen["groups"]}
            else:
                seen["applications"] = sorted(set(seen["applications"]) | set(entry["applications"]))
            seen["queues"] = _merge_tree(seen["queues"], entry["queues"])
    return merged


def _user_dao(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"userName": entry["userName"]}
    put(out, "groups", sorted_map(entry["groups"]))
    out["queues"] = _tree_dao(entry["queues"])
    return out


def _group_dao(entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"groupName": entry["groupName"]}
    put(out, "applications", sorted(entry["applications"]))
    out["queues"] = _tree_dao(entry["queues"])
    return out


def users(ctx: ClusterContext, partition: str = "") -> list[dict[str, Any]]:
    """``/partition/{p}/usage/users``: every tracked user, by name (``[]`` when none)."""
    merged = _collect(ctx, "users")
    return [_user_dao(merged[name]) for name in sorted(merged)]


def user(ctx: ClusterContext, partition: str, name: str) -> dict[str, Any]:
    """``/partition/{p}/usage/user/{u}``: 400 for a name YuniKorn's UserRegExp rejects, 404
    for a user without usage."""
    if not name:
        raise BadRequest(USER_NAME_MISSING)
    if not USER_NAME_RE.fullmatch(name):
        raise BadRequest(INVALID_USER_NAME)
    entry = _collect(ctx, "users").get(name)
    if entry is None:
        raise NotFound(USER_NOT_FOUND)
    return _user_dao(entry)


def groups(ctx: ClusterContext, partition: str = "") -> list[dict[str, Any]]:
    """``/partition/{p}/usage/groups``: every tracked group, by name (``[]`` when none)."""
    merged = _collect(ctx, "groups")
    return [_group_dao(merged[name]) for name in sorted(merged)]


def group(ctx: ClusterContext, partition: str, name: str) -> dict[str, Any]:
    """``/partition/{p}/usage/group/{g}``: 400 for a name YuniKorn's GroupRegExp rejects, 404
    for a group without usage."""
    if not name:
        raise BadRequest(GROUP_NAME_MISSING)
    if not GROUP_NAME_RE.fullmatch(name):
        raise BadRequest(INVALID_GROUP_NAME)
    entry = _collect(ctx, "groups").get(name)
    if entry is None:
        raise NotFound(GROUP_NOT_FOUND)
    return _group_dao(entry)
