"""YuniKorn's event-sequence oracle over HTTP: a real gunicorn serves the scheduler, the
scheduling loop makes the allocation, and after every step the batch endpoint and a stream
opened with count=1000 hold exactly the expected tuples (events.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from event_oracle import CONFIG, STEPS, tuples
from web_helpers import Server, StreamClient


def batch(server: Server) -> list[dict]:
    r = server.get("/ws/v1/events/batch", params={"start": 0, "count": 1000})
    assert r.status_code == 200
    return r.json()["EventRecords"] or []


def stream_records(stream: StreamClient, n: int) -> list[dict]:
    lines = []
    for _ in range(n):
        line = stream.read_line(timeout=5.0)
        assert line is not None, "the stream ended"
        lines.append(json.loads(line))
    assert all("InstanceUUID" not in line for line in lines)
    return lines


def test_application_history_tracking_over_http(start_server: Callable[..., Server], tmp_path: Path) -> None:
    config = tmp_path / "oracle.yaml"
    config.write_text(CONFIG)
    server = start_server(["--config", str(config), "--rm", "oracle_rm:attach"])
    stream = StreamClient(server.port, "/ws/v1/events/stream?count=1000")
    try:
        assert stream.status == 200
        first = json.loads(stream.read_line(timeout=5.0) or b"{}")
        assert first["InstanceUUID"], "the stream starts with a non-empty InstanceUUID"

        expected: list[tuple] = []
        for step in ("register", "node", "app", "ask", "release"):
            if step != "register":
                r = server.request("POST", f"/test/oracle/{step}", timeout=30)
                assert r.status_code == 200 and r.json()["ok"], f"step {step}: {r.text}"
            expected += STEPS[step]
            records = batch(server)
            assert len(records) == len(expected), f"after {step}"
            assert tuples(records) == expected, f"after {step}"
            assert tuples(stream_records(stream, len(STEPS[step]))) == STEPS[step], f"stream after {step}"
    finally:
        stream.close()
