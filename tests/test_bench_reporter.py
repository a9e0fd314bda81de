"""``python -m benchmarks reporter --quick``: every part measures something and the rounds
update exactly the nodes that changed (no timing assertions: the machine is shared)."""

from __future__ import annotations

from benchmarks import reporter
from benchmarks.__main__ import FAMILIES


def test_quick_run_updates_only_what_changed() -> None:
    assert "reporter" in FAMILIES
    report = reporter.run(quick=True, progress=lambda message: None)
    assert report.failures == []
    updated = {name: count for name, (_, count, _) in report.rounds.items()}
    assert all(0 < in_plugins < ms for ms, _, in_plugins in report.rounds.values())
    assert updated == {"first (every node)": reporter.QUICK_NODES,
                       "5 % of the nodes changed": int(reporter.QUICK_NODES * reporter.CHANGED),
                       "nothing changed": 0}
    assert report.ratio() is not None and "## Node reporter manager" in report.format()
