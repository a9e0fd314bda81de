"""The web console's HTTP rules, without a browser (the session server of conftest.py, the
scenario RM's cluster): every page and the stylesheet answer GET only, with the console's
security headers (a CSP allowing this origin's stylesheet and nothing else, no framing, no
sniffing); ``/ui`` redirects to ``/ui/`` as httprouter would; errors are HTML pages with the
API's status and message; large pages are gzipped like the API's answers; nothing rendered is
markup that came from data; and the API's own answers are unchanged by the console's routes
(JSON, CORS, plain-text 404 outside /ui/)."""

from __future__ import annotations

import re

import pytest

from web_helpers import Server

PAGES = ("/ui/", "/ui/pending", "/ui/why?app=app-pending", "/ui/nodes", "/ui/events", "/ui/roles", "/ui/reporters")
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")


def _secure(response) -> None:
    assert response.headers["Content-Security-Policy"] == CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("path", PAGES)
def test_pages_answer_html_with_the_security_headers(server: Server, path: str) -> None:
    r = server.get(path)
    assert r.status_code == 200, r.text[:300]
    assert r.headers["Content-Type"] == "text/html; charset=utf-8"
    _secure(r)
    body = r.text
    # No script and no inline style anywhere (the CSP would refuse them); one stylesheet.
    assert "<script" not in body and " style=" not in body and "<style" not in body
    assert re.findall(r'<link rel="stylesheet" href="([^"]+)"', body) == ["/ui/static/console.css"]
    assert "http://" not in body and "https://" not in body


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "HEAD"])
def test_pages_are_get_only(server: Server, path: str, method: str) -> None:
    r = server.request(method, path)
    assert r.status_code == 405 and "GET" in r.headers["Allow"]


def test_stylesheet_and_icon(server: Server) -> None:
    css = server.get("/ui/static/console.css")
    assert css.status_code == 200 and css.headers["Content-Type"].startswith("text/css")
    _secure(css)
    assert "@import" not in css.text and "url(" not in css.text  # nothing fetched from elsewhere
    assert server.get("/ui/static/favicon.svg").status_code == 200
    assert server.get("/ui/static/../app.py").status_code == 404


def test_ui_without_the_slash_redirects(server: Server) -> None:
    r = server.get("/ui?partition=default")
    assert r.status_code == 301 and r.headers["Location"] == "/ui/?partition=default"


def test_errors_are_pages_with_the_api_s_status_and_message(server: Server) -> None:
    r = server.get("/ui/?partition=nope")
    assert r.status_code == 404 and r.headers["Content-Type"] == "text/html; charset=utf-8"
    assert '<p class="error" id="error-message">Partition not found</p>' in r.text
    _secure(r)
    r = server.get("/ui/events?type=bogus")
    assert r.status_code == 400 and "unknown event type" in r.text
    assert server.get("/ui/events?refresh=1").status_code == 400
    assert server.get("/ui/roles?key=nope").status_code == 404
    assert server.get("/ui/pending?offset=-1").status_code == 400
    assert server.get("/ui/why").status_code == 400
    assert server.get("/ui/why?app=nope").status_code == 404
    # Outside /ui/ the router's answers are unchanged: plain text.
    r = server.get("/ui/nope")
    assert r.status_code == 404 and r.text == "404 page not found\n"


def test_parameters_are_escaped(server: Server) -> None:
    hostile = '"><b id=x>'
    r = server.get("/ui/?partition=" + hostile)
    assert r.status_code == 404
    assert hostile not in r.text
    r = server.get("/ui/events", params={"partition": hostile, "type": "node"})
    assert r.status_code == 200 and hostile not in r.text and "&#34;&gt;&lt;b id=x&gt;" in r.text


def test_pages_show_the_scenario(server: Server) -> None:
    queues = server.get("/ui/").text
    assert 'data-queue="root.a"' in queues and 'data-queue="root.b"' in queues
    nodes = server.get("/ui/nodes").text
    heat = re.search(r'<div class="heat" id="heatmap">(.*?)</div>', nodes)
    assert heat is not None and heat.group(1).count("<i ") == 2
    pending = server.get("/ui/pending").text
    assert 'data-app="app-pending"' in pending
    events = server.get("/ui/events?type=QUEUE&refresh=5")
    assert '<meta http-equiv="refresh" content="5">' in events.text
    assert 'data-type="APP"' not in events.text and 'data-type="QUEUE"' in events.text


def test_large_pages_are_gzipped(server: Server) -> None:
    r = server.get("/ui/events", headers={"Accept-Encoding": "gzip"}, stream=True)
    assert r.headers["Content-Encoding"] == "gzip"


def test_the_api_is_unchanged(server: Server) -> None:
    r = server.get("/ws/v1/partitions")
    assert r.status_code == 200 and r.headers["Content-Type"] == "application/json; charset=UTF-8"
    assert r.headers["Access-Control-Allow-Origin"] == "*" and "Content-Security-Policy" not in r.headers


def test_the_web_wheel_carries_the_console() -> None:
    """Templates and the stylesheet are package data: a pip-installed service serves the console."""
    import zipfile
    from pathlib import Path

    wheels = sorted((Path(__file__).resolve().parents[2] / "dist").glob("pyscheduler_web-*.whl"),
                    key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail("no pyscheduler-web wheel in dist/: run `make wheels` (make test does it first)")
    names = set(zipfile.ZipFile(wheels[-1]).namelist())
    for page in ("base", "error", "queues", "pending", "nodes", "events", "roles", "reporters"):
        assert f"pyscheduler_web/console/templates/console/{page}.html" in names
    assert "pyscheduler_web/console/static/console.css" in names
