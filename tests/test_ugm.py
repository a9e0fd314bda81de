"""Behaviour tests of ``pyscheduler.objects.ugm.UserGroupManager``: usage per user and group
along the queue path, headroom and running-application limits (explicit and wildcard), group
selection, tracker cleanup, the exact USERGROUP events and concurrent use.

Events are recorded through ``UserGroupEvents`` over a recording ``add`` callable (the emitter's
real entry point); one test wires a real ``EventSystem`` and checks the REST batch bytes.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from pyscheduler.common.clock import ManualClock
from pyscheduler.common.resources import Resource
from pyscheduler.events import EventSystem
from pyscheduler.objects.object_events import UserGroupEvents
from pyscheduler.objects.locking import LockNotHeldError
from pyscheduler.objects.ugm import Limit, LimitSpec, UserGroupManager

pytestmark = pytest.mark.timeout(60)

USERGROUP = 5
SET, ADD, REMOVE = 1, 2, 3
UG_USER_LIMIT, UG_GROUP_LIMIT, UG_APP_LINK, UG_USER_RESOURCE, UG_GROUP_RESOURCE = 600, 601, 602, 603, 604


class Recorder:
    """The ``add`` of an event system that keeps every call as a tuple."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> bool:
        with self._lock:
            self.calls.append(args)
        return True

    def take(self) -> list[tuple[Any, ...]]:
        with self._lock:
            calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def ugm(recorder: Recorder) -> UserGroupManager:
    return UserGroupManager(UserGroupEvents(recorder))


def res(**quantities: int) -> Resource:
    return Resource(quantities)


def limit(users: tuple[str, ...] = (), groups: tuple[str, ...] = (), apps: int = 0, **maximum: int) -> LimitSpec:
    return LimitSpec(users, groups, Resource(maximum) if maximum else None, apps)


# --------------------------------------------------------------------------------------------
# usage along the path
# --------------------------------------------------------------------------------------------


def test_usage_is_tracked_at_every_level_for_the_user_and_the_linked_group(ugm):
    ugm.set_limits("root", [limit(groups=("g1",), memory=1000)])
    ugm.increase_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=10, vcore=1))
    ugm.increase_usage("root.a.c", "app-2", "u1", ["g1"], res(memory=5))
    for path, expected in (("root", res(memory=15, vcore=1)), ("root.a", res(memory=15, vcore=1)),
                           ("root.a.b", res(memory=10, vcore=1)), ("root.a.c", res(memory=5))):
        assert ugm.user_usage("u1", path) == expected
        assert ugm.group_usage("g1", path) == expected
    assert ugm.user_usage("u1", "root.x") == Resource()
    assert ugm.app_group("app-1") == "g1"

    assert ugm.decrease_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=4))
    assert ugm.user_usage("u1", "root") == res(memory=11, vcore=1)
    assert ugm.group_usage("g1", "root.a.b") == res(memory=6, vcore=1)
    assert ugm.is_consistent()


def test_users_are_tracked_separately(ugm):
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=10))
    ugm.increase_usage("root.a", "app-2", "u2", [], res(memory=3))
    assert ugm.user_usage("u1", "root.a") == res(memory=10)
    assert ugm.user_usage("u2", "root.a") == res(memory=3)
    assert ugm.tracked_users() == ["u1", "u2"]
    assert ugm.tracked_groups() == []


def test_no_group_limit_means_no_group_tracking(ugm, recorder):
    ugm.set_limits("root", [limit(users=("u1",), memory=100)])
    recorder.take()
    ugm.increase_usage("root.a", "app-1", "u1", ["g1", "g2"], res(memory=10))
    assert ugm.app_group("app-1") is None
    assert ugm.tracked_groups() == []
    assert recorder.take() == [(USERGROUP, ADD, UG_USER_RESOURCE, "u1", "root.a", "", res(memory=10))]


def test_decrease_of_an_unknown_application_is_refused(ugm):
    assert not ugm.decrease_usage("root.a", "nope", "u1", [], res(memory=1))


def test_an_application_keeps_its_user_and_queue(ugm):
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=1))
    with pytest.raises(ValueError, match="application app-1 is tracked for user u1 in root.a"):
        ugm.increase_usage("root.b", "app-1", "u1", [], res(memory=1))
    with pytest.raises(ValueError, match="mandatory parameters are missing"):
        ugm.increase_usage("root.a", "app-2", "", [], res(memory=1))
    with pytest.raises(ValueError, match="not a fully-qualified queue path"):
        ugm.increase_usage("a.b", "app-3", "u1", [], res(memory=1))


# --------------------------------------------------------------------------------------------
# cleanup
# --------------------------------------------------------------------------------------------


def test_trackers_and_levels_without_usage_or_running_apps_are_removed(ugm):
    ugm.set_limits("root", [limit(groups=("g1",), apps=10)])
    ugm.increase_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=10))
    ugm.increase_usage("root.c", "app-2", "u1", ["g1"], res(memory=5))

    # usage back to zero but the app still runs: the level stays
    ugm.decrease_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=10))
    assert ugm.user_dao("u1")["queues"]["children"][0]["queuePath"] == "root.a"

    ugm.decrease_usage("root.a.b", "app-1", "u1", ["g1"], Resource(), app_done=True)
    user = ugm.user_dao("u1")
    assert [c["queuePath"] for c in user["queues"]["children"]] == ["root.c"]
    assert user["groups"] == {"app-2": "g1"}

    ugm.decrease_usage("root.c", "app-2", "u1", ["g1"], res(memory=5), app_done=True)
    assert ugm.tracked_users() == []
    assert ugm.tracked_groups() == []
    assert ugm.usage_dao() == {"users": [], "groups": []}
    assert ugm.is_consistent()


def test_remove_app_drops_what_is_left_and_unlinks(ugm, recorder):
    ugm.set_limits("root", [limit(groups=("g1",), apps=5)])
    ugm.increase_usage("root.a", "app-1", "u1", ["g1"], res(memory=6))
    ugm.increase_usage("root.a", "app-2", "u1", ["g1"], res(memory=1))
    recorder.take()
    assert ugm.remove_app("app-1", "u1")
    assert recorder.take() == [
        (USERGROUP, REMOVE, UG_USER_RESOURCE, "u1", "root.a", "", res(memory=6)),
        (USERGROUP, REMOVE, UG_APP_LINK, "g1", "app-1"),
        (USERGROUP, REMOVE, UG_GROUP_RESOURCE, "g1", "root.a", "", res(memory=6)),
    ]
    assert ugm.user_usage("u1") == res(memory=1)
    assert ugm.group_dao("g1")["applications"] == ["app-2"]
    assert not ugm.remove_app("app-1", "u1")
    # an application whose usage is already back to zero: only the link goes
    ugm.decrease_usage("root.a", "app-2", "u1", ["g1"], res(memory=1))
    recorder.take()
    assert ugm.remove_app("app-2", "u1")
    assert recorder.take() == [(USERGROUP, REMOVE, UG_APP_LINK, "g1", "app-2")]
    assert ugm.tracked_users() == [] and ugm.tracked_groups() == [] and ugm.is_consistent()


def test_consistency_check_reports_usage_left_by_a_done_application(ugm):
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=10))
    ugm.decrease_usage("root.a", "app-1", "u1", [], res(memory=4), app_done=True)
    problems = ugm.check_consistency()
    assert problems and all("u1" in p for p in problems)
    assert ugm.tracked_users() == ["u1"]


# --------------------------------------------------------------------------------------------
# headroom
# --------------------------------------------------------------------------------------------


def test_headroom_is_unlimited_without_limits(ugm):
    assert ugm.headroom("root.a", "app-1", "u1", ["g1"]) is None


def test_headroom_with_partial_max_leaves_missing_types_unlimited(ugm):
    ugm.set_limits("root.a", [limit(users=("u1",), memory=100)])
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=30, vcore=5))
    assert ugm.headroom("root.a", "app-2", "u1", []) == res(memory=70)
    assert ugm.headroom("root.a", "app-2", "u1", []).get("vcore", None) is None
    # a sibling queue only sees root's limits (none)
    assert ugm.headroom("root.b", "app-2", "u1", []) is None


def test_headroom_is_the_minimum_over_the_path(ugm):
    ugm.set_limits("root", [limit(users=("u1",), memory=100, vcore=10)])
    ugm.set_limits("root.a", [limit(users=("u1",), memory=50)])
    ugm.increase_usage("root.a.x", "app-1", "u1", [], res(memory=30, vcore=2))
    ugm.increase_usage("root.b", "app-2", "u1", [], res(memory=60, vcore=1))
    # root: 100-90=10 memory, 10-3=7 vcore; root.a: 50-30=20 memory
    assert ugm.headroom("root.a.x", "app-3", "u1", []) == res(memory=10, vcore=7)


def test_headroom_can_be_negative(ugm):
    ugm.set_limits("root", [limit(users=("u1",), memory=10)])
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=25))
    assert ugm.headroom("root.a", "app-1", "u1", []) == res(memory=-15)


def test_headroom_includes_the_group(ugm):
    ugm.set_limits("root", [limit(users=("u1",), memory=100), limit(groups=("g1",), memory=40, vcore=4)])
    ugm.increase_usage("root.a", "app-1", "u2", ["g1"], res(memory=25, vcore=1))
    # u1 has nothing in use (100), the group g1 is shared with u2 (40-25)
    assert ugm.headroom("root.a", "app-2", "u1", ["g1"]) == res(memory=15, vcore=3)
    assert ugm.headroom("root.a", "app-2", "u1", ["other"]) == res(memory=100)


def test_zero_max_resources_is_no_limit(ugm):
    ugm.set_limits("root", [limit(users=("u1",), apps=2, memory=0)])
    assert ugm.limit_for_user("u1", "root") == Limit(None, 2)
    assert ugm.headroom("root.a", "app-1", "u1", []) is None


# --------------------------------------------------------------------------------------------
# wildcards
# --------------------------------------------------------------------------------------------


def test_wildcard_user_limit_applies_to_every_user_on_their_own(ugm):
    ugm.set_limits("root", [limit(users=("vip",), memory=1000), limit(users=("*",), apps=1, memory=50)])
    ugm.increase_usage("root.a", "app-1", "u1", [], res(memory=20))
    assert ugm.headroom("root.a", "app-2", "u1", []) == res(memory=30)
    assert ugm.headroom("root.a", "app-2", "u2", []) == res(memory=50)
    assert ugm.can_run_app("root.a", "app-1", "u1", [])
    assert not ugm.can_run_app("root.a", "app-2", "u1", [])
    assert ugm.can_run_app("root.a", "app-2", "u2", [])
    # an explicit limit wins; what it leaves unset comes from the wildcard
    assert ugm.limit_for_user("vip", "root") == Limit(res(memory=1000), 1)
    assert ugm.limit_for_user("anyone", "root") == Limit(res(memory=50), 1)


def test_explicit_limit_with_only_max_apps_takes_the_wildcard_resources(ugm):
    ugm.set_limits("root", [limit(users=("u1",), apps=5), limit(users=("*",), apps=1, memory=8)])
    assert ugm.limit_for_user("u1", "root") == Limit(res(memory=8), 5)
    assert ugm.headroom("root.a", "app-1", "u1", []) == res(memory=8)


def test_wildcard_group_tracks_unmatched_groups_together(ugm):
    ugm.set_limits("root", [limit(groups=("dev",), memory=100), limit(groups=("*",), memory=30, apps=1)])
    ugm.increase_usage("root.a", "app-1", "u1", ["x"], res(memory=20))
    ugm.increase_usage("root.a", "app-2", "u2", ["dev"], res(memory=50))
    assert ugm.app_group("app-1") == "*"
    assert ugm.app_group("app-2") == "dev"
    # u3 (group y) shares the "*" tracker with u1
    assert ugm.headroom("root.a", "app-3", "u3", ["y"]) == res(memory=10)
    assert not ugm.can_run_app("root.a", "app-3", "u3", ["y"])
    assert ugm.headroom("root.a", "app-3", "u3", ["dev"]) == res(memory=50)
    # a user without groups is never group-tracked
    assert ugm.headroom("root.a", "app-3", "u3", []) is None
    assert ugm.group_dao("*")["applications"] == ["app-1"]


# --------------------------------------------------------------------------------------------
# max applications
# --------------------------------------------------------------------------------------------


def test_can_run_app_checks_every_level(ugm):
    ugm.set_limits("root", [limit(users=("u1",), apps=3)])
    ugm.set_limits("root.a", [limit(users=("u1",), apps=1)])
    assert ugm.can_run_app("root.a.x", "app-1", "u1", [])
    ugm.increase_usage("root.a.x", "app-1", "u1", [], res(memory=1))
    assert ugm.can_run_app("root.a.x", "app-1", "u1", [])  # already running counts as allowed
    assert not ugm.can_run_app("root.a.y", "app-2", "u1", [])  # root.a full
    assert ugm.can_run_app("root.b", "app-2", "u1", [])
    ugm.increase_usage("root.b", "app-2", "u1", [], res(memory=1))
    ugm.increase_usage("root.c", "app-3", "u1", [], res(memory=1))
    assert not ugm.can_run_app("root.d", "app-4", "u1", [])  # root full (3)
    ugm.decrease_usage("root.b", "app-2", "u1", [], res(memory=1), app_done=True)
    assert ugm.can_run_app("root.d", "app-4", "u1", [])
    assert ugm.can_run_app("root.a.y", "app-4", "u2", [])  # another user


def test_can_run_app_checks_the_group(ugm):
    ugm.set_limits("root.a", [limit(groups=("g1",), apps=1)])
    ugm.increase_usage("root.a", "app-1", "u1", ["g1"], res(memory=1))
    assert not ugm.can_run_app("root.a", "app-2", "u2", ["g1"])
    assert ugm.can_run_app("root.a", "app-2", "u2", ["g2"])
    assert ugm.can_run_app("root.b", "app-2", "u2", ["g1"])


def test_queries_link_nothing(ugm, recorder):
    ugm.set_limits("root", [limit(groups=("g1",), apps=1)])
    recorder.take()
    ugm.headroom("root.a", "app-1", "u1", ["g1"])
    ugm.can_run_app("root.a", "app-1", "u1", ["g1"])
    assert recorder.take() == []
    assert ugm.tracked_users() == [] and ugm.app_group("app-1") is None


# --------------------------------------------------------------------------------------------
# group selection
# --------------------------------------------------------------------------------------------


def test_group_is_selected_from_the_leaf_upwards(ugm):
    ugm.set_limits("root", [limit(groups=("g2",), apps=10)])
    ugm.set_limits("root.a.b", [limit(groups=("g1",), apps=10)])
    ugm.increase_usage("root.a.b", "app-1", "u1", ["g2", "g1"], res(memory=1))
    ugm.increase_usage("root.a.c", "app-2", "u1", ["g2", "g1"], res(memory=1))
    assert ugm.app_group("app-1") == "g1"
    assert ugm.app_group("app-2") == "g2"


def test_group_selection_at_one_level_follows_the_configuration_order(ugm):
    ugm.set_limits("root", [limit(groups=("g3", "g1"), apps=10), limit(groups=("g2",), apps=10)])
    ugm.increase_usage("root.a", "app-1", "u1", ["g2", "g1"], res(memory=1))
    assert ugm.app_group("app-1") == "g1"


def test_selected_group_stays_until_the_application_is_done(ugm):
    ugm.set_limits("root", [limit(groups=("g1",), apps=10)])
    ugm.increase_usage("root.a", "app-1", "u1", ["g1"], res(memory=1))
    ugm.set_limits("root.a", [limit(groups=("g2",), apps=10)])  # a closer match appears
    ugm.increase_usage("root.a", "app-1", "u1", ["g1", "g2"], res(memory=1))
    assert ugm.app_group("app-1") == "g1"
    assert ugm.group_usage("g1", "root.a") == res(memory=2)


# --------------------------------------------------------------------------------------------
# events
# --------------------------------------------------------------------------------------------


def test_exact_event_tuples(ugm, recorder):
    ugm.set_limits("root.a", [limit(users=("u1",), groups=("g1",), apps=2, memory=100)])
    assert recorder.take() == [
        (USERGROUP, SET, UG_USER_LIMIT, "u1", "root.a"),
        (USERGROUP, SET, UG_GROUP_LIMIT, "g1", "root.a"),
    ]
    ugm.increase_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=10))
    assert recorder.take() == [
        (USERGROUP, SET, UG_APP_LINK, "g1", "app-1"),
        (USERGROUP, ADD, UG_USER_RESOURCE, "u1", "root.a.b", "", res(memory=10)),
        (USERGROUP, ADD, UG_GROUP_RESOURCE, "g1", "root.a.b", "", res(memory=10)),
    ]
    ugm.increase_usage("root.a.b", "app-1", "u1", ["g1"], res(vcore=2))
    assert recorder.take() == [
        (USERGROUP, ADD, UG_USER_RESOURCE, "u1", "root.a.b", "", res(vcore=2)),
        (USERGROUP, ADD, UG_GROUP_RESOURCE, "g1", "root.a.b", "", res(vcore=2)),
    ]
    ugm.decrease_usage("root.a.b", "app-1", "u1", ["g1"], res(memory=10))
    assert recorder.take() == [
        (USERGROUP, REMOVE, UG_USER_RESOURCE, "u1", "root.a.b", "", res(memory=10)),
        (USERGROUP, REMOVE, UG_GROUP_RESOURCE, "g1", "root.a.b", "", res(memory=10)),
    ]
    ugm.decrease_usage("root.a.b", "app-1", "u1", ["g1"], res(vcore=2), app_done=True)
    assert recorder.take() == [
        (USERGROUP, REMOVE, UG_USER_RESOURCE, "u1", "root.a.b", "", res(vcore=2)),
        (USERGROUP, REMOVE, UG_APP_LINK, "g1", "app-1"),
        (USERGROUP, REMOVE, UG_GROUP_RESOURCE, "g1", "root.a.b", "", res(vcore=2)),
    ]


def test_limit_events_only_on_change(ugm, recorder):
    ugm.update_limits({"root": [limit(users=("u1", "*"), apps=2)], "root.a": [limit(groups=("g1",), apps=1)]})
    assert recorder.take() == [
        (USERGROUP, SET, UG_USER_LIMIT, "u1", "root"),
        (USERGROUP, SET, UG_USER_LIMIT, "*", "root"),
        (USERGROUP, SET, UG_GROUP_LIMIT, "g1", "root.a"),
    ]
    ugm.update_limits({"root": [limit(users=("u1", "*"), apps=2)], "root.a": [limit(groups=("g1",), apps=1)]})
    assert recorder.take() == []
    ugm.update_limits({"root": [limit(users=("u1",), apps=3)]})
    assert recorder.take() == [
        (USERGROUP, REMOVE, UG_GROUP_LIMIT, "g1", "root.a"),
        (USERGROUP, REMOVE, UG_USER_LIMIT, "*", "root"),
        (USERGROUP, SET, UG_USER_LIMIT, "u1", "root"),
    ]
    ugm.set_limits("root", [])
    assert recorder.take() == [(USERGROUP, REMOVE, UG_USER_LIMIT, "u1", "root")]
    assert ugm.limit_for_user("u1", "root") is None


def test_removing_the_group_limit_moves_the_application_to_the_next_selection(ugm, recorder):
    ugm.set_limits("root", [limit(groups=("g2",), apps=10)])
    ugm.set_limits("root.a", [limit(groups=("g1",), apps=10)])
    ugm.increase_usage("root.a", "app-1", "u1", ["g1", "g2"], res(memory=7))
    assert ugm.app_group("app-1") == "g1"
    recorder.take()
    ugm.set_limits("root.a", [])
    assert recorder.take() == [
        (USERGROUP, REMOVE, UG_GROUP_LIMIT, "g1", "root.a"),
        (USERGROUP, REMOVE, UG_GROUP_RESOURCE, "g1", "root.a", "", res(memory=7)),
        (USERGROUP, REMOVE, UG_APP_LINK, "g1", "app-1"),
        (USERGROUP, SET, UG_APP_LINK, "g2", "app-1"),
        (USERGROUP, ADD, UG_GROUP_RESOURCE, "g2", "root.a", "", res(memory=7)),
    ]
    assert ugm.app_group("app-1") == "g2"
    assert ugm.tracked_groups() == ["g2"]
    assert ugm.group_usage("g2", "root") == res(memory=7)
    assert ugm.user_dao("u1")["groups"] == {"app-1": "g2"}
    assert ugm.is_consistent()
    # without any group limit left the application is no longer group-tracked
    ugm.set_limits("root", [])
    assert ugm.app_group("app-1") is None and ugm.tracked_groups() == []
    ugm.decrease_usage("root.a", "app-1", "u1", ["g1", "g2"], res(memory=7), app_done=True)
    assert ugm.tracked_users() == [] and ugm.is_consistent()


def test_usage_event_through_a_real_event_system():
    system = EventSystem(clock=ManualClock(1_700_000_000_000_000_000))
    try:
        ugm = UserGroupManager(UserGroupEvents(system.add))
        ugm.increase_usage("root.singleleaf", "app-1", "testuser", [], res(memory=10000000, vcore=1000))
        ugm.decrease_usage("root.singleleaf", "app-1", "testuser", [], res(memory=10000000, vcore=1000), app_done=True)
        assert system.flush(5.0)
        uid = system.instance_uuid.encode()
        resource = b'"resource":{"resources":{"memory":{"value":10000000},"vcore":{"value":1000}}}'
        added = (
            b'{"type":5,"objectID":"testuser","timestampNano":1700000000000000000,"eventChangeType":2,'
            b'"eventChangeDetail":603,"referenceID":"root.singleleaf",' + resource + b"}"
        )
        removed = added.replace(b'"eventChangeType":2', b'"eventChangeType":3')
        assert system.batch_body(0, 10) == (
            b'{"InstanceUUID":"' + uid + b'","LowestID":0,"HighestID":1,"EventRecords":[' + added + b"," + removed + b"]}\n"
        )
    finally:
        system.stop()


# --------------------------------------------------------------------------------------------
# REST data
# --------------------------------------------------------------------------------------------


def test_usage_dao(ugm):
    ugm.set_limits("root", [limit(users=("*",), apps=4), limit(groups=("g1",), memory=100)])
    ugm.set_limits("root.a", [limit(users=("u1",), apps=2, memory=50)])
    ugm.increase_usage("root.a", "app-2", "u1", ["g1"], res(memory=5))
    ugm.increase_usage("root.a", "app-1", "u1", ["g1"], res(memory=3))
    assert ugm.usage_dao() == {
        "users": [
            {
                "userName": "u1",
                "groups": {"app-1": "g1", "app-2": "g1"},
                "queues": {
                    "queuePath": "root",
                    "resourceUsage": {"memory": 8},
                    "runningApplications": ["app-1", "app-2"],
                    "maxResources": None,
                    "maxApplications": 4,
                    "children": [
                        {
                            "queuePath": "root.a",
                            "resourceUsage": {"memory": 8},
                            "runningApplications": ["app-1", "app-2"],
                            "maxResources": {"memory": 50},
                            "maxApplications": 2,
                            "children": [],
                        }
                    ],
                },
            }
        ],
        "groups": [
            {
                "groupName": "g1",
                "applications": ["app-1", "app-2"],
                "queues": {
                    "queuePath": "root",
                    "resourceUsage": {"memory": 8},
                    "runningApplications": ["app-1", "app-2"],
                    "maxResources": {"memory": 100},
                    "maxApplications": 0,
                    "children": [
                        {
                            "queuePath": "root.a",
                            "resourceUsage": {"memory": 8},
                            "runningApplications": ["app-1", "app-2"],
                            "maxResources": None,
                            "maxApplications": 0,
                            "children": [],
                        }
                    ],
                },
            }
        ],
    }
    assert ugm.user_dao("nobody") is None and ugm.group_dao("nobody") is None


# --------------------------------------------------------------------------------------------
# concurrency
# --------------------------------------------------------------------------------------------


def test_concurrent_increase_and_decrease_keep_usage_consistent(recorder: Recorder) -> None:
    # The lock model: the partition's lock guards the usage manager, as every object of the
    # partition; threads that hold it while they change and check usage see it consistent.
    lock = threading.RLock()
    ugm = UserGroupManager(UserGroupEvents(recorder), lock)
    with lock:
        ugm.set_limits("root", [limit(groups=("shared",), apps=1000)])
    threads_count, rounds = 4, 400
    users = ["u0", "u1"]
    failures: list[str] = []
    start = threading.Barrier(threads_count + 1)
    done = threading.Event()

    def worker(index: int) -> None:
        user = users[index % len(users)]
        start.wait()
        for round_ in range(rounds):
            app = f"app-{index}-{round_ % 3}"
            queue = f"root.q{index % 2}.leaf{round_ % 3}"
            with lock:
                ugm.increase_usage(queue, app, user, ["shared"], res(memory=2, vcore=1))
                ugm.increase_usage(queue, app, user, ["shared"], res(memory=1))
                ugm.headroom(queue, app, user, ["shared"])
                ugm.can_run_app(queue, app, user, ["shared"])
            with lock:
                ugm.decrease_usage(queue, app, user, ["shared"], res(memory=3, vcore=1), app_done=round_ % 2 == 1)
        # every app ends done
        for slot in range(3):
            app = f"app-{index}-{slot}"
            with lock:
                if ugm.app_group(app) is not None:
                    queue = f"root.q{index % 2}.leaf{slot}"
                    ugm.decrease_usage(queue, app, user, ["shared"], Resource(), app_done=True)

    checks = 0

    def checker() -> None:
        nonlocal checks
        start.wait()
        # Consistency mid-flight; the pause lets the workers take the lock in between.
        while not done.wait(0.001):
            with lock:
                failures.extend(ugm.check_consistency())
            checks += 1

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads_count)]
    watcher = threading.Thread(target=checker)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often so that operations interleave
    try:
        for thread in (*workers, watcher):
            thread.start()
        for thread in workers:
            thread.join(30)
        done.set()
        watcher.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in (*workers, watcher))
    assert failures == []
    assert checks > 0
    assert ugm.is_consistent()
    assert ugm.tracked_users() == [] and ugm.tracked_groups() == []
    assert ugm.user_usage("u0") == Resource()


def test_changing_usage_without_the_partition_lock_is_caught(recorder: Recorder) -> None:
    # The test run sets PYSCHEDULER_CHECK_LOCKS=1: a change without the partition's lock raises.
    lock = threading.RLock()
    ugm = UserGroupManager(UserGroupEvents(recorder), lock)
    with pytest.raises(LockNotHeldError, match="user and group usage changed without holding its partition's lock"):
        ugm.increase_usage("root.a", "app-1", "alice", (), res(memory=1))
    assert ugm.tracked_users() == []
    with lock:
        ugm.increase_usage("root.a", "app-1", "alice", (), res(memory=1))
    assert ugm.user_usage("alice") == res(memory=1)
