"""The web console (``/ui/``, pyscheduler_web.console) in a real browser: Debian's Chromium
driven by playwright (console_browser.py) against a real gunicorn.

The fixed two-cluster state of console_rm.py is served once for the module; each page is
loaded, its content checked against the REST API's JSON for the same (settled) state, the
partition selector and the event filter clicked, and the page's screenshot compared with its
baseline in tests/ui_baselines/ (``UPDATE_UI_BASELINES=1`` regenerates them; see
docs/console.md). Times and event ids, which change from run to run, are masked. The demo
cluster (live, random) is only checked for content, never screenshotted. Every page must load
with no console error: a Content-Security-Policy violation (an inline style or script) is one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from console_browser import check_screenshot, chromium
from console_rm import CONSOLE_QUEUES, HOSTILE_NODE, MANY_NODES, PENDING_BATCH, ROLE_KEY
from web_helpers import Server, launch, stop

EAST = "[console-east]default"
WEST = "[console-west]default"


def _settled(server: Server) -> None:
    """Wait until every ask that can be placed is and the pending ones are known."""
    deadline = time.monotonic() + 20
    while True:
        apps = server.get(f"/ws/v1/partition/{quote(EAST)}/applications/active").json()
        pending = sorted(a["applicationID"] for a in apps if a.get("pendingResource"))
        history = server.get(f"/ws/v1/partition/{quote(EAST)}/rolehistory/{ROLE_KEY}")
        if pending == sorted([*PENDING_BATCH, "bob-1"]) and history.status_code == 200:
            return
        assert time.monotonic() < deadline, f"state never settled: pending {pending}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("console")
    config = tmp / "queues.yaml"
    config.write_text(CONSOLE_QUEUES)
    srv = launch(tmp, ["--config", str(config), "--rm", "console_rm:attach_east", "--rm", "console_rm:attach_west"])
    try:
        _settled(srv)
        yield srv
    finally:
        code = stop(srv)
    log = srv.log()
    assert code == 0 and "Traceback" not in log, log


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("browser")) as context:
        yield context


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[[str], Any]]:
    """``open_page(url)`` -> a loaded page; at teardown, no page may have logged an error."""
    pages: list[Any] = []
    errors: list[str] = []

    def open_(url: str) -> Any:
        page = browser.new_page()
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: errors.append(str(err)))
        pages.append(page)
        response = page.goto(url)
        assert response is not None and response.status == 200, f"{url}: {response and response.status}"
        return page

    yield open_
    for page in pages:
        page.close()
    assert errors == [], f"browser console errors: {errors}"


def _shot(page: Any, name: str, tmp_path: Path, mask: tuple[str, ...] = ()) -> None:
    png = page.screenshot(full_page=True, animations="disabled", caret="hide",
                          mask=[page.locator(sel) for sel in mask], mask_color="#888888")
    check_screenshot(png, name, tmp_path / "screenshots")


def _values(page: Any, selector: str, attribute: str = "data-value") -> list[str]:
    return [str(v) for v in page.eval_on_selector_all(selector, f"els => els.map(e => e.getAttribute('{attribute}'))")]


# -- queues ------------------------------------------------------------------------------------


def _api_queue_lines(root: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    lines = []

    def walk(q: dict[str, Any]) -> None:
        mx, gu = q.get("maxResource", {}), q.get("guaranteedResource", {})
        used, pend = q.get("allocatedResource", {}), q.get("pendingResource", {})
        for name in sorted({*mx, *gu, *used, *pend}) or ["vcore"]:
            lines.append((q["queuename"], name, str(used.get(name, 0)), str(gu.get(name, "")),
                          str(mx.get(name, "")), str(pend.get(name, 0))))
        for child in q.get("children", []):
            walk(child)

    walk(root)
    return lines


def _page_queue_lines(page: Any) -> list[tuple[str, ...]]:
    rows = page.eval_on_selector_all("#queues tbody tr", """rows => rows.map(r => [
        r.dataset.queue, r.dataset.resource,
        r.querySelector('.used').dataset.value, r.querySelector('.guaranteed').dataset.value,
        r.querySelector('.max').dataset.value, r.querySelector('.pending').dataset.value])""")
    return [tuple(r) for r in rows]


def test_queues_page_shows_the_api_s_numbers(console: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    page = open_page(f"{console.url}/ui/?partition={quote(EAST)}")
    root = console.get(f"/ws/v1/partition/{quote(EAST)}/queues").json()
    assert _page_queue_lines(page) == _api_queue_lines(root)
    batch_vcore = page.locator('#queues tr[data-queue="root.batch"][data-resource="vcore"]')
    # 6 cores used of a 6-core max, 2 guaranteed, 4.5 pending (batch-1..3): in cores, as a person reads them.
    assert batch_vcore.locator(".used").inner_text() == "6"
    assert batch_vcore.locator(".max").inner_text() == "6"
    assert batch_vcore.locator(".guaranteed").inner_text() == "2"
    assert batch_vcore.locator(".pending").inner_text() == "4.5"
    assert batch_vcore.locator(".fill").get_attribute("class") == "fill w100 over"
    (partition,) = [p for p in console.get("/ws/v1/partitions").json() if p["clusterId"] == "console-east"]
    assert page.locator("#total-nodes").inner_text() == str(partition["totalNodes"]) == "24"
    assert page.locator("#total-apps").inner_text() == str(partition["applications"]["total"])
    _shot(page, "queues", tmp_path)


def test_the_partition_selector_switches_cluster(console: Server, open_page: Callable[[str], Any]) -> None:
    page = open_page(f"{console.url}/ui/")
    labels = page.eval_on_selector_all("#partition option", "os => os.map(o => o.textContent)")
    assert labels == [EAST, WEST]
    page.select_option("#partition", WEST)
    page.click("#show")
    page.wait_for_load_state()
    assert f"partition={quote(WEST, safe='')}" in page.url or f"partition={quote(WEST)}" in page.url
    assert page.locator("#total-nodes").inner_text() == "3"
    prod = page.locator('#queues tr[data-queue="root.prod"][data-resource="vcore"] .used')
    assert prod.get_attribute("data-value") == "6000"
    # The other pages keep the partition: the navigation's links carry it.
    page.click("nav >> text=Nodes")
    page.wait_for_load_state()
    assert page.locator("#node-count").inner_text() == "3"
    assert page.locator("#partition").input_value() == WEST


# -- pending -----------------------------------------------------------------------------------


def test_pending_applications_in_order_with_why(console: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    page = open_page(f"{console.url}/ui/pending?partition={quote(EAST)}")
    order = _values(page, "#pending tbody tr", "data-app")
    api = console.get(f"/ws/v1/partition/{quote(EAST)}/pending").json()
    assert order == [p["applicationID"] for p in api]
    assert sorted(order) == sorted([*PENDING_BATCH, "bob-1"])
    # Submission order within root.batch (a FIFO leaf).
    assert [a for a in order if a in PENDING_BATCH] == list(PENDING_BATCH)
    positions = page.eval_on_selector_all("#pending tbody tr", """rs => rs.map(r => [
        Number(r.querySelector('.position').textContent), Number(r.querySelector('.in-queue').textContent)])""")
    assert positions == [[p["inPartition"], p["inQueue"]] for p in api]
    for entry in api:
        app_id = entry["applicationID"]
        row = f'#pending tr[data-app="{app_id}"]'
        shown = page.eval_on_selector_all(f"{row} .pending-res .res-item",
                                          "es => Object.fromEntries(es.map(e => [e.dataset.resource, Number(e.dataset.value)]))")
        assert shown == entry["pending"]
        why = console.get(f"/ws/v1/partition/{quote(EAST)}/application/{app_id}/why?nodes=false").json()
        assert page.locator(f"{row} .why .clamp").get_attribute("title") == why["summary"] != ""
    assert "root.batch" in page.locator('#pending tr[data-app="batch-1"] .why').inner_text()
    # The summaries' wording is the core's (checked above): masked, two lines at most each.
    _shot(page, "pending", tmp_path, mask=("#pending .why",))


def test_why_page_from_the_pending_list(console: Server, open_page: Callable[[str], Any]) -> None:
    page = open_page(f"{console.url}/ui/pending?partition={quote(EAST)}")
    page.click('#pending tr[data-app="batch-2"] .app a')
    page.wait_for_load_state()
    assert "app=batch-2" in page.url
    answer = console.get(f"/ws/v1/partition/{quote(EAST)}/application/batch-2/why").json()
    assert page.locator("#why-app").inner_text() == "batch-2"
    assert page.locator("#why-summary").inner_text() == answer["summary"]
    codes = page.eval_on_selector_all(".ask", "as => as.map(a => [a.dataset.ask, a.querySelector('.code').dataset.code])")
    assert codes == [[a["allocationKey"], a["code"]] for a in answer["asks"]]
    assert codes[0][1] == "QUEUE_MAX"
    assert page.locator("#partition").input_value() == EAST


# -- nodes -------------------------------------------------------------------------------------


def test_node_heat_map_buckets_follow_the_api(console: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    page = open_page(f"{console.url}/ui/nodes?partition={quote(EAST)}")
    nodes = console.get(f"/ws/v1/partition/{quote(EAST)}/nodes").json()
    expected = [f"h{min(max(n.get('utilized', {}).values(), default=0), 100) // 10}" for n in nodes]
    assert _values(page, "#heatmap i", "class") == expected
    # The busiest: east-18..16 (hbase 1 core + ...) are not; east-12..15 run 2 of 4 cores (50 %), east-11 3.6 cores.
    busiest = page.eval_on_selector_all("#busiest tbody tr", "rs => rs.map(r => [r.dataset.node, r.querySelector('.share').dataset.value])")
    by_id = {n["nodeID"]: max(n.get("utilized", {}).values(), default=0) for n in nodes}
    assert busiest[0] == ["east-11", str(by_id["east-11"])] == ["east-11", "90"]
    assert all(int(share) == by_id[node] for node, share in busiest)
    _shot(page, "nodes", tmp_path)


def test_node_ids_are_text_never_markup(console: Server, open_page: Callable[[str], Any]) -> None:
    page = open_page(f"{console.url}/ui/nodes?partition={quote(WEST)}")
    assert page.locator("main img").count() == 0
    assert page.title() != "1"
    cells = page.eval_on_selector_all("#busiest tbody tr", "rs => rs.map(r => r.dataset.node)")
    assert HOSTILE_NODE in cells
    assert page.locator(f'#heatmap i[title^="{HOSTILE_NODE[:4]}"]').count() == 1


@pytest.fixture(scope="module")
def many_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("console-many")
    config = tmp / "queues.yaml"
    config.write_text(CONSOLE_QUEUES)
    srv = launch(tmp, ["--config", str(config), "--rm", "console_rm:attach_many"])
    try:
        deadline = time.monotonic() + 30
        while srv.get("/ws/v1/partitions").json()[0].get("totalNodes") != MANY_NODES:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        yield srv
    finally:
        stop(srv)


def test_heat_map_of_5000_nodes(many_nodes: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    started = time.monotonic()
    page = open_page(f"{many_nodes.url}/ui/nodes")
    elapsed = time.monotonic() - started
    assert page.locator("#heatmap i").count() == MANY_NODES
    assert page.locator("#node-count").inner_text() == str(MANY_NODES)
    raw = many_nodes.get("/ui/nodes", headers={"Accept-Encoding": "identity"})
    zipped = many_nodes.get("/ui/nodes", headers={"Accept-Encoding": "gzip"}, stream=True)
    # One small element per node: the page stays small, and smaller still as sent.
    assert len(raw.content) < 400_000, len(raw.content)
    assert zipped.headers["Content-Encoding"] == "gzip" and int(zipped.headers["Content-Length"]) < 60_000
    assert elapsed < 20, f"the 5,000-node page took {elapsed:.1f}s to load"
    counts = {b: int(n) for b, n in zip(_values(page, "#legend .n", "data-bucket"),
                                          page.eval_on_selector_all("#legend .n", "es => es.map(e => e.textContent)"))}
    assert sum(counts.values()) == MANY_NODES
    assert counts["h0"] == MANY_NODES - len(range(0, MANY_NODES, 7))
    _shot(page, "nodes-5000", tmp_path)


# -- events ------------------------------------------------------------------------------------


def test_event_timeline_newest_first_and_filtered(console: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    before = console.get("/ws/v1/events/batch?count=1").json()["HighestID"]
    page = open_page(f"{console.url}/ui/events")
    ids = [int(i) for i in page.eval_on_selector_all("#events .eid", "es => es.map(e => e.textContent)")]
    assert ids == sorted(ids, reverse=True) and len(ids) > 10
    batch = console.get("/ws/v1/events/batch").json()
    # The newest event the ring held when the page was drawn comes first.
    assert before <= ids[0] <= batch["HighestID"]
    page.select_option("#type", "NODE")
    page.click("#filter")
    page.wait_for_load_state()
    assert "type=NODE" in page.url
    types = set(_values(page, "#events tbody tr", "data-type"))
    assert types == {"NODE"}
    api_nodes = [e["objectID"] for e in batch["EventRecords"] if e["type"] == 3]
    shown = _values(page, "#events tbody tr", "data-object")
    assert set(shown) == set(api_nodes)
    assert page.locator("#type").input_value() == "NODE"
    _shot(page, "events-node", tmp_path, mask=("#events .time", "#events .eid", ".ids"))


# -- role history and reporters -----------------------------------------------------------------


def test_role_history(console: Server, open_page: Callable[[str], Any], tmp_path: Path) -> None:
    page = open_page(f"{console.url}/ui/roles?partition={quote(EAST)}")
    assert _values(page, "#history-keys a", "href") and page.locator("#history-key").inner_text() == ROLE_KEY
    history = console.get(f"/ws/v1/partition/{quote(EAST)}/rolehistory/{ROLE_KEY}").json()
    rows = page.eval_on_selector_all("#roles tbody tr", "rs => rs.map(r => [r.dataset.node, r.dataset.role, r.querySelector('.live').textContent])")
    assert rows == [[node, role, str(c["live"])] for node, e in history["nodes"].items() for role, c in e["roles"].items()]
    assert [r[0] for r in rows] == ["east-16", "east-17", "east-18"]
    _shot(page, "roles", tmp_path, mask=("#roles .time",))
    west = open_page(f"{console.url}/ui/roles?partition={quote(WEST)}")
    assert west.locator("#no-histories").count() == 1


def test_reporters_and_every_page_of_the_demo(start_server: Callable[..., Server], open_page: Callable[[str], Any]) -> None:
    demo = start_server(["--demo"])
    page = open_page(f"{demo.url}/ui/reporters")
    api = demo.get("/ws/v1/reporters").json()
    assert _values(page, "#reporters tbody tr", "data-reporter") == [r["name"] for r in api] == ["topology", "reclaim-advisor"]
    page = open_page(f"{demo.url}/ui/")
    assert "root.default" in _values(page, "#queues tbody tr", "data-queue")
    for path in ("pending", "nodes", "events", "roles"):
        page = open_page(f"{demo.url}/ui/{path}")
        assert page.locator("h1").count() == 1
    assert open_page(f"{demo.url}/ui/nodes").locator("#heatmap i").count() == 4
