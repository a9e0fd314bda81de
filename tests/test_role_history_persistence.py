"""Saved role histories: the file format, the store (local files and fsspec's memory file
system), the saver off the scheduling thread, a restarted scheduler that brings roles back, and
a SIGKILL in the middle of a save (shared/spec/rolehistory.md's persistence cases 12-14, and the
seed's crash safety that Slider never had)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from rm_helpers import World
from test_role_history import NODES, cycle_until_idle, start

from pyscheduler.common.clock import ManualClock
from pyscheduler.policies.role_history import file_format
from pyscheduler.policies.role_history.file_format import HistoryFileError, SavedEntry, decode, encode
from pyscheduler.policies.role_history.store import HistoryStore
from pyscheduler.scheduler.role_history_saver import RoleHistorySaver

SAVED_MS = 1_700_000_123_456


def entries(n: int, key: str = "svc", role: str = "worker") -> list[SavedEntry]:
    return [SavedEntry(key, f"node-{i:05d}", role, False, SAVED_MS - 100_000 + i) for i in range(n)]


@pytest.fixture
def memory_url() -> Iterator[str]:
    url = f"memory://rolehistory-{uuid.uuid4().hex}"
    yield url
    fs = fsspec.filesystem("memory")
    path = url.removeprefix("memory://")
    if fs.exists(path):
        fs.rm(path, recursive=True)


def history_world(store: HistoryStore, clock: ManualClock | None = None) -> World:
    world = World(role_history_store=store, clock=clock)
    for node_id in NODES:
        world.add_node(node_id, memory=1000, vcore=100)
    return world


# -- the format ------------------------------------------------------------------------------------------


def test_round_trip_keeps_last_used_and_active_entries_come_back_at_the_save_time() -> None:
    saved = [SavedEntry("svc", "n1", "master", False, 0xF00D), SavedEntry("svc", "n2", "worker", True, 7),
             SavedEntry("other \"key\"\n", "n\u00e9", "w\u00f6rker", False, 3)]
    loaded = decode(encode("default", SAVED_MS, saved))
    assert loaded.saved_ms == SAVED_MS and loaded.partition == "default" and loaded.unknown_roles == 0
    assert loaded.entries == [saved[0], SavedEntry("svc", "n2", "worker", True, SAVED_MS), saved[2]]
    assert decode(encode("default", SAVED_MS, [])).entries == []


def test_roles_are_matched_by_name_and_unknown_role_ids_are_discarded_and_counted() -> None:
    lines = encode("default", SAVED_MS, entries(3)).decode().splitlines()
    # A role map that lists roles in another order still loads by name.
    lines[1] = '{"type":"roles","roles":{"master":5,"worker":0}}'
    assert [e.role for e in decode("\n".join(lines).encode()).entries] == ["worker"] * 3
    # An entry whose role id is not in the map is dropped, and counted.
    lines[2] = lines[2].replace('"role":0', '"role":9')
    loaded = decode("\n".join(lines).encode())
    assert len(loaded.entries) == 2 and loaded.unknown_roles == 1


@pytest.mark.parametrize(("mangle", "reason"), [
    (lambda lines: [], "empty"),
    (lambda lines: lines[:-1], "no footer"),
    (lambda lines: lines[:-2], "no footer"),
    (lambda lines: lines + [lines[2]], "after the footer"),
    (lambda lines: lines[:1] + lines, "second header"),
    (lambda lines: lines[1:], "not a header"),
    (lambda lines: [lines[0].replace('"version":1', '"version":2')] + lines[1:], "unsupported version 2"),
    (lambda lines: lines[:2] + lines[3:], "footer counts"),
    (lambda lines: lines[:2] + ['{"type":"entry"'] + lines[3:], "not JSON"),
    (lambda lines: lines[:2] + ["[1, 2]"] + lines[3:], "not a JSON object"),
    (lambda lines: lines[:2] + ['{"type":"surprise"}'] + lines[2:], "unknown record type"),
    (lambda lines: [lines[0], '{"type":"roles","roles":{"a":0,"b":0}}'] + lines[2:], "registered twice"),
    (lambda lines: lines[:2] + [re.sub(r'"last_used":\d+', '"last_used":-1', lines[2])] + lines[3:], "bad entry"),
])
def test_broken_files_are_refused_with_a_reason(mangle: object, reason: str) -> None:
    lines = encode("default", SAVED_MS, entries(3)).decode().splitlines()
    assert callable(mangle)
    with pytest.raises(HistoryFileError, match=reason):
        decode("\n".join(mangle(lines)).encode())


def test_bytes_that_are_not_text_are_refused() -> None:
    with pytest.raises(HistoryFileError, match="not UTF-8"):
        decode(b"\xff\xfe" + encode("default", SAVED_MS, entries(1)))


# -- the store ----------------------------------------------------------------------------------------------


def test_listing_ignores_other_names_and_sorts_newest_first(memory_url: str) -> None:
    store = HistoryStore(memory_url)
    fs = fsspec.filesystem("memory")
    directory = store.directory("default")
    fs.makedirs(directory, exist_ok=True)
    for ms in (0x5FFFA, 0x0406C, 0x0001F, 0x0001A):
        fs.pipe(f"{directory}/{file_format.file_name(ms)}", encode("default", ms, entries(1)))
    for other in ("rolehistory-xyz.json", "notes.txt", "rolehistory-0000000000000001.json.bak"):
        fs.pipe(f"{directory}/{other}", b"x")
    assert store.files("default") == [file_format.file_name(ms) for ms in (0x5FFFA, 0x0406C, 0x0001F, 0x0001A)]


@pytest.mark.parametrize("where", ["memory", "local"])
def test_saves_keep_the_newest_files_and_load_the_newest(where: str, memory_url: str, tmp_path: Path) -> None:
    store = HistoryStore(memory_url if where == "memory" else tmp_path.as_uri(), keep=3)
    paths = [store.save("default", SAVED_MS, entries(i + 1)) for i in range(5)]
    # The same clock reading five times: each save still gets a newer name.
    assert store.files("default") == [p.rsplit("/", 1)[1] for p in reversed(paths[2:])]
    loaded = store.load("default", SAVED_MS)
    assert loaded.path == paths[-1] and len(loaded.entries) == 5 and loaded.skipped == []
    # A later store on the same directory (a restarted scheduler) names its saves after them,
    # even with a clock that went back.
    later = HistoryStore(store.url, keep=3).save("default", SAVED_MS - 10_000, entries(1))
    assert later > paths[-1] and store.load("default", SAVED_MS).path == later


def test_a_broken_newer_file_is_skipped_reported_and_kept(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path.as_uri())
    good = store.save("default", SAVED_MS, entries(4))
    directory = Path(store.directory("default"))
    # Cut at a line boundary, so only the missing footer tells.
    truncated = b"".join(encode("default", SAVED_MS + 10, entries(50)).splitlines(keepends=True)[:-1])
    (directory / file_format.file_name(SAVED_MS + 10)).write_bytes(truncated)
    (directory / file_format.file_name(SAVED_MS + 20)).write_bytes(b"")
    (directory / file_format.file_name(SAVED_MS + 30)).mkdir()  # unreadable: a directory
    future = encode("default", SAVED_MS + 40, entries(1)).replace(b'"version":1', b'"version":7')
    (directory / file_format.file_name(SAVED_MS + 40)).write_bytes(future)
    loaded = store.load("default", SAVED_MS)
    assert loaded.path == good and len(loaded.entries) == 4
    assert [Path(p).name for p, _ in loaded.skipped] == [file_format.file_name(SAVED_MS + d) for d in (40, 30, 20, 10)]
    reasons = [r for _, r in loaded.skipped]
    assert "unsupported version 7" in reasons[0] and "empty file" in reasons[2] and "no footer" in reasons[3]
    assert (directory / file_format.file_name(SAVED_MS + 10)).exists()


def test_nothing_to_load_is_an_empty_history(tmp_path: Path, memory_url: str) -> None:
    for url in (tmp_path.as_uri() + "/absent", memory_url):
        loaded = HistoryStore(url).load("default", SAVED_MS)
        assert loaded.entries == [] and loaded.path == "" and loaded.skipped == []


def test_entries_older_than_the_maximum_age_are_dropped_on_load(memory_url: str) -> None:
    store = HistoryStore(memory_url, max_age=3600)
    now = 10_000_000_000
    store.save("default", now, [SavedEntry("svc", "old", "r", False, now - 3_601_000),
                                SavedEntry("svc", "new", "r", False, now - 3_599_000)])
    loaded = store.load("default", now)
    assert [e.node_id for e in loaded.entries] == ["new"] and loaded.aged_out == 1


def test_an_oversized_file_is_refused_unread(memory_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyscheduler.policies.role_history import store as store_module

    store = HistoryStore(memory_url)
    small = store.save("default", SAVED_MS, entries(1))
    big = store.save("default", SAVED_MS + 1, entries(100))
    monkeypatch.setattr(store_module, "MAX_FILE_BYTES", 1000)
    loaded = store.load("default", SAVED_MS)
    assert loaded.path == small and loaded.skipped[0][0] == big and "bytes" in loaded.skipped[0][1]


def test_store_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="keep"):
        HistoryStore("memory://x", keep=0)
    with pytest.raises(ValueError, match="max_age"):
        HistoryStore("memory://x", max_age=0)


# -- through the RM interface: save, restart, come back ------------------------------------------------------


def test_a_restarted_scheduler_brings_the_roles_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path.as_uri())
    first = history_world(store)
    saver = RoleHistorySaver(first.context, store)
    placed = start(first, "hbase-1", "region", 3) + start(first, "hbase-1b", "master", 1)
    first.remove_app("hbase-1")  # the region servers stop: available again, lastUsed now
    assert saver.save_changed() == 1 and saver.saves == 1
    assert saver.save_changed() == 0, "nothing changed since: no new file"
    first.close()

    # A new scheduler process: the masters ran when the file was saved (active), the region
    # servers had stopped; all come back to their nodes.
    second = history_world(HistoryStore(tmp_path.as_uri()))
    history = second.partition().role_histories.get("svc")
    assert history is not None and sorted(history.recent("region")) == sorted(placed[:3])
    assert history.recent("master") == [placed[3]]
    assert sorted(start(second, "hbase-2", "region", 3)) == sorted(placed[:3])
    second.close()


def test_saves_that_fail_are_counted_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the history directory should be")
    store = HistoryStore(blocker.as_uri())
    world = history_world(store)
    saver = RoleHistorySaver(world.context, store)
    start(world, "app", "worker", 2)
    assert saver.save_changed() == 0 and saver.save_errors == 1 and saver.last_error
    assert saver.save_changed() == 0 and saver.save_errors == 2, "a failed save is retried though nothing changed"
    blocker.unlink()
    assert saver.save_changed() == 1 and saver.saves == 1
    assert len(store.load("default", SAVED_MS).entries) == 2
    world.close()


def test_the_saver_thread_saves_after_a_change_and_once_more_on_stop(memory_url: str) -> None:
    store = HistoryStore(memory_url)
    world = history_world(store)
    saver = RoleHistorySaver(world.context, store, delay=0.05)
    saver.start()
    try:
        placed = start(world, "app", "worker", 2)
        deadline = time.monotonic() + 10
        while saver.saves == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert saver.saves >= 1 and len(store.files("default")) == 1
        time.sleep(0.3)
        assert saver.saves == 1, "no change, no save"
        world.release("app", "app-worker-0")
    finally:
        saver.stop()
    assert not saver.running and saver.saves == 2
    loaded = store.load("default", world.clock.now_ns() // 1_000_000)
    assert sorted((e.node_id, e.active) for e in loaded.entries) == sorted([(placed[0], False), (placed[1], True)])
    world.close()


def test_a_corrupt_history_never_fails_the_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = HistoryStore(tmp_path.as_uri())
    directory = Path(store.directory("default"))
    directory.mkdir(parents=True)
    (directory / file_format.file_name(SAVED_MS)).write_bytes(b'{"type":"header","version":99}\n')
    world = history_world(store)
    assert len(world.partition().role_histories) == 0
    assert "skipped" in caplog.text and "unsupported version 99" in caplog.text
    assert start(world, "app", "worker", 2), "the scheduler schedules as usual"
    world.close()


# -- a crash in the middle of a save -------------------------------------------------------------------------

ENTRIES_IN_CRASH_TEST = 100_000
_SAVER_PROCESS = textwrap.dedent("""
    import sys
    from pyscheduler.policies.role_history.file_format import SavedEntry
    from pyscheduler.policies.role_history.store import HistoryStore

    store = HistoryStore(sys.argv[1], keep=3)
    base = [SavedEntry("svc", f"node-{i:06d}", "worker", False, 1000 + i) for i in range(int(sys.argv[2]))]
    generation = 0
    while True:
        generation += 1
        print("saving", generation, flush=True)
        path = store.save("default", 1_700_000_000_000, base + [SavedEntry("svc", "marker", "gen", False, generation)])
        print("committed", generation, path, flush=True)
""")


def test_a_sigkill_in_the_middle_of_a_save_loses_nothing_committed(tmp_path: Path) -> None:
    """A real process saving again and again is killed while a file of its next save is being
    written (the moment a new file appears in the directory) or a little later; the newest
    committed file must load whole. A writer that wrote the final file in place fails this."""
    url = tmp_path.as_uri()
    directory = Path(HistoryStore(url).directory("default"))
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    for kill_after in (None, None, None, 0.002, 0.02):
        proc = subprocess.Popen([sys.executable, "-c", _SAVER_PROCESS, url, str(ENTRIES_IN_CRASH_TEST)], stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        committed = 0
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                words = proc.stdout.readline().split()
                assert words, "the saver process ended"
                if words[0] == "committed":
                    committed = int(words[1])
                elif committed >= 2:
                    break  # it has started its next save
            if kill_after is None:
                before = set(os.listdir(directory))
                while time.monotonic() < deadline and set(os.listdir(directory)) <= before:
                    pass  # until the next save's first file appears
            else:
                time.sleep(kill_after)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        loaded = HistoryStore(url, max_age=1e12).load("default", 1_700_000_000_000)
        generations = [e.last_used_ms for e in loaded.entries if e.node_id == "marker"]
        assert loaded.skipped == [], "no committed file is damaged"
        assert len(loaded.entries) == ENTRIES_IN_CRASH_TEST + 1 and generations and generations[0] >= committed
