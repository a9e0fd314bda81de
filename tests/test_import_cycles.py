"""No import cycle among the product's modules (issue 32), type-only imports aside: a cycle
means two modules that cannot change or load apart. The graph is grimp's (import-linter's
own), with ``if TYPE_CHECKING:`` imports left out and function-level imports kept (a lazy
import still ties the two modules together)."""

from __future__ import annotations

import grimp

PACKAGES = ("pyscheduler", "pyscheduler_web", "pyscheduler_k8s")


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    modules = set(graph.modules)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) & modules for m in modules}
    assert strongly_connected(edges) == []
