"""Node choice in the scheduling cycle, through the RM interface: required-node asks, the RM's
predicates, and reservations (after the reservation delay, kept until space frees up, cleared
when the reserved node or application goes)."""

from __future__ import annotations

from scheduling_helpers import C, D, T, clusters, config  # noqa: F401

from pyscheduler.si import messages as si
from pyscheduler.si.messages import TAG_REQUIRED_NODE

ONE_LEAF = config("          - name: a\n          - name: b\n")


def _reservation_events(events):
    """(change type, node, ask) of every NODE_RESERVATION event."""
    return [(e[1], e[3], e[4]) for e in events if e[0] == T.NODE and e[2] == D.NODE_RESERVATION]


def _required(node_id: str) -> dict[str, str]:
    return {TAG_REQUIRED_NODE: node_id}


# -- required node ---------------------------------------------------------------------------------


def test_required_node_asks_go_to_their_node(clusters) -> None:
    c = clusters(ONE_LEAF)
    c.add_nodes(4)
    c.add_app("app-1")
    for i in range(3):
        c.ask(f"pinned-{i}", "app-1", tags=_required("node-02"))
    c.ask("free", "app-1")
    assert c.schedule() == 4
    placements = c.placements()
    assert {placements[f"pinned-{i}"] for i in range(3)} == {"node-02"}
    # The fair order would have spread them: the free ask went to an empty node.
    assert placements["free"] != "node-02"
    c.assert_healthy()


def test_required_node_ask_on_a_full_node_reserves_it_at_once_and_gets_it_later(clusters) -> None:
    c = clusters(ONE_LEAF, reservation_delay=1000.0)  # the delay does not apply to required nodes
    c.add_node("node-00", memory=20, vcore=2)
    c.add_node("node-01", memory=100, vcore=10)
    c.add_app("app-1")
    c.ask("filler-0", "app-1", tags=_required("node-00"))
    c.ask("filler-1", "app-1", tags=_required("node-00"))
    assert c.schedule() == 2
    mark = c.mark()
    c.ask("pinned", "app-1", tags=_required("node-00"))
    assert c.schedule() == 0
    assert c.reserved() == {"pinned": "node-00"}
    assert _reservation_events(c.events(mark)) == [(C.ADD, "node-00", "pinned")]
    # Never placed elsewhere, even with node-01 empty.
    assert c.once() == [] and "pinned" not in c.placements()
    mark = c.mark()
    c.release("app-1", "filler-0")
    assert c.schedule() == 1
    assert c.placements()["pinned"] == "node-00"
    assert c.reserved() == {}
    events = c.events(mark)
    assert _reservation_events(events) == [(C.REMOVE, "node-00", "pinned")]
    # The reservation went before the allocation landed.
    kinds = [(e[0], e[1], e[2], e[4]) for e in events]
    assert kinds.index((T.NODE, C.REMOVE, D.NODE_RESERVATION, "pinned")) < kinds.index(
        (T.NODE, C.ADD, D.NODE_ALLOC, "pinned"))
    c.assert_healthy()


def test_required_node_ask_for_an_unknown_node_waits(clusters) -> None:
    c = clusters(ONE_LEAF)
    c.add_nodes(2)
    c.add_app("app-1")
    c.ask("pinned", "app-1", tags=_required("node-09"))
    assert c.schedule() == 0
    c.advance(5)
    assert c.schedule() == 0
    assert c.reserved() == {}
    c.add_node("node-09")
    assert c.schedule() == 1
    assert c.placements() == {"pinned": "node-09"}
    c.assert_healthy()


# -- predicates ------------------------------------------------------------------------------------


def test_a_node_the_predicates_refuse_is_never_used(clusters) -> None:
    refused = "node-00"
    c = clusters(ONE_LEAF, predicates=lambda key, node, allocate: "taint" if node == refused else None)
    c.add_nodes(3)  # node-00 would come first in the fair order
    c.add_app("app-1")
    c.asks("app-1", 25)
    assert c.schedule() == 20
    assert refused not in c.per_node()
    assert c.per_node() == {"node-01": 10, "node-02": 10}
    # The refusal was asked for, and logged on the asks that met it.
    assert any(a.node_id == refused and a.allocate for a in c.rm.predicate_calls)
    assert any(a.alloc_log.get("taint") for a in c.app("app-1").asks.values())
    # After the delay the waiting asks reserve, but not the refused node either.
    c.advance(2)
    c.once()
    assert c.reserved() and refused not in c.reserved().values()
    reservation_checks = [a for a in c.rm.predicate_calls if not a.allocate]
    assert any(a.node_id == refused for a in reservation_checks)
    # Lifting the refusal lets node-00 take the rest.
    c.rm.set_predicates(None)
    assert c.schedule() == 5
    assert c.per_node()[refused] == 5
    c.assert_healthy()


def test_predicates_see_each_ask_and_node(clusters) -> None:
    # Only "gpu-*" asks may go to node-01 and only there.
    def fits(key: str, node: str, allocate: bool) -> str | None:
        return None if key.startswith("gpu") == (node == "node-01") else "wrong node"

    c = clusters(ONE_LEAF, predicates=fits)
    c.add_nodes(3)
    c.add_app("app-1")
    c.send(*(c.ask_msg(f"gpu-{i}", "app-1") for i in range(3)), *(c.ask_msg(f"cpu-{i}", "app-1") for i in range(6)))
    assert c.schedule() == 9
    placements = c.placements()
    assert {placements[f"gpu-{i}"] for i in range(3)} == {"node-01"}
    assert {placements[f"cpu-{i}"] for i in range(6)} <= {"node-00", "node-02"}
    c.assert_healthy()


# -- reservations -----------------------------------------------------------------------------------


def _basic_reservation(clusters, **kwargs):
    """YuniKorn's TestBasicReservation: 2 nodes of 50, 6 asks of 20."""
    c = clusters(ONE_LEAF, **kwargs)
    c.add_node("node-00", memory=50, vcore=10)
    c.add_node("node-01", memory=50, vcore=10)
    c.add_app("app-1")
    keys = c.asks("app-1", 6, memory=20, vcore=1)
    assert c.schedule() == 4
    return c, keys


def test_an_ask_that_fits_no_node_reserves_one_after_the_delay(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    waiting = [k for k in keys if k not in c.placements()]
    assert len(waiting) == 2
    # Before the delay: no reservation.
    c.advance(1.9)
    assert c.once() == []
    assert c.reserved() == {}
    mark = c.mark()
    c.advance(0.1)
    assert c.once() == []  # reserving is not an allocation
    # Each waiting ask holds one node (a node takes one normal reservation).
    assert c.reserved() == {waiting[0]: "node-00", waiting[1]: "node-01"}
    assert _reservation_events(c.events(mark)) == [(C.ADD, "node-00", waiting[0]), (C.ADD, "node-01", waiting[1])]
    for node_id in ("node-00", "node-01"):
        assert len(c.partition.nodes[node_id].reservations) == 1
    c.assert_healthy()
    # The reserved ask gets its node when space frees up there.
    on_node_01 = [k for k, n in c.placements().items() if n == "node-01"]
    mark = c.mark()
    c.release("app-1", on_node_01[0])
    assert c.schedule() == 1
    assert c.placements()[waiting[1]] == "node-01"
    assert c.reserved() == {waiting[0]: "node-00"}
    events = c.events(mark)
    assert _reservation_events(events) == [(C.REMOVE, "node-01", waiting[1])]
    assert (T.NODE, C.ADD, D.NODE_ALLOC, "node-01", waiting[1], "") in events
    c.assert_healthy()


def test_the_reservation_delay_is_configurable(clusters) -> None:
    c, keys = _basic_reservation(clusters, reservation_delay=10.0)
    c.advance(9)
    c.once()
    assert c.reserved() == {}
    c.advance(1)
    c.once()
    assert len(c.reserved()) == 2
    c.assert_healthy()


def test_a_reserved_node_is_kept_for_its_ask(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    reserved = c.reserved()
    # Each node has 10 free, enough for a small ask of another app: reserved nodes are not
    # offered to it.
    c.add_app("app-2", user="bob")
    c.ask("small", "app-2", memory=5, vcore=1)
    assert c.schedule() == 0
    assert "small" not in c.placements()
    # Space frees up on node-00: its reserved ask goes first, then the small one gets a node.
    on_node_00 = next(k for k, n in c.placements().items() if n == "node-00")
    c.release("app-1", on_node_00)
    waiting_00 = next(k for k, n in reserved.items() if n == "node-00")
    decisions = c.once()
    assert [(d.ask.allocation_key, d.node.node_id, d.from_reservation) for d in decisions] == [
        (waiting_00, "node-00", True)]
    assert c.schedule() == 1
    assert c.placements()["small"] == "node-00"  # the only node left without a reservation
    c.assert_healthy()


def test_a_reserved_ask_may_move_to_another_node_that_frees_up(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    first, second = sorted(c.reserved())
    assert c.reserved() == {first: "node-00", second: "node-01"}
    # A third node arrives: the reserved asks use it (a normal reservation may go elsewhere).
    mark = c.mark()
    c.add_node("node-02", memory=50, vcore=10)
    assert c.schedule() == 2
    assert c.placements()[first] == "node-02" and c.placements()[second] == "node-02"
    assert c.reserved() == {}
    assert sorted(_reservation_events(c.events(mark))) == [(C.REMOVE, "node-00", first), (C.REMOVE, "node-01", second)]
    c.assert_healthy()


def test_removing_the_reserved_node_clears_the_reservation(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    reserved = c.reserved()
    ask_on_00 = next(k for k, n in reserved.items() if n == "node-00")
    mark = c.mark()
    c.remove_node("node-00")
    assert ask_on_00 not in c.reserved()
    assert c.partition.reservations.on_node("node-00") == []
    assert (C.REMOVE, "node-00", ask_on_00) in _reservation_events(c.events(mark))
    # Its allocations were released to the RM with the node.
    assert all(n != "node-00" for n in c.placements().values())
    c.assert_healthy()
    # The ask is pending again and can use a new node.
    c.add_node("node-03", memory=50, vcore=10)
    c.schedule()
    assert c.placements()[ask_on_00] == "node-03"
    c.assert_healthy()


def test_removing_the_app_clears_its_reservations(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    reserved = c.reserved()
    assert len(reserved) == 2
    mark = c.mark()
    c.remove_app("app-1")
    assert c.reserved() == {}
    for node_id in ("node-00", "node-01"):
        assert c.partition.nodes[node_id].reservations == {}
    assert sorted(_reservation_events(c.events(mark))) == sorted((C.REMOVE, n, k) for k, n in reserved.items())
    c.assert_healthy()
    # The nodes are free for others again.
    c.add_app("app-2", user="bob")
    c.asks("app-2", 4, memory=25, vcore=1)
    assert c.schedule() == 4
    c.assert_healthy()


def test_releasing_a_reserved_ask_clears_its_reservation(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    ask, node = sorted(c.reserved().items())[0]
    mark = c.mark()
    c.release("app-1", ask)
    assert ask not in c.reserved()
    assert _reservation_events(c.events(mark)) == [(C.REMOVE, node, ask)]
    c.assert_healthy()


def test_the_rm_binding_a_reserved_ask_clears_its_reservation(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    ask, node = sorted(c.reserved().items())[0]
    # The RM places the ask itself (an allocation with a node for a pending key).
    c.release("app-1", next(k for k, n in c.placements().items() if n == node))
    c.send(si.Allocation(allocation_key=ask, application_id="app-1", partition_name="default",
                         resource_per_alloc=c.app("app-1").asks[ask].resource, node_id=node))
    assert ask in c.app("app-1").allocations
    assert ask not in c.reserved()
    c.assert_healthy()


def test_a_required_node_ask_displaces_a_normal_reservation(clusters) -> None:
    c, keys = _basic_reservation(clusters)
    c.advance(2)
    c.once()
    normal = next(k for k, n in c.reserved().items() if n == "node-00")
    mark = c.mark()
    c.ask("pinned", "app-1", memory=20, vcore=1, tags=_required("node-00"))
    c.once()
    assert c.reserved().get("pinned") == "node-00"
    assert normal not in c.reserved()
    assert _reservation_events(c.events(mark)) == [(C.REMOVE, "node-00", normal), (C.ADD, "node-00", "pinned")]
    c.assert_healthy()
