"""An HTTP/1.0 client of ``/ws/v1/events/stream``: gunicorn cannot chunk the body, so the
stream writer writes plain NDJSON (the body ends when the connection closes) until the
client leaves, with the same lines an HTTP/1.1 client gets."""

from __future__ import annotations

import json
import socket
import time

from web_helpers import Server

BATCH = "/ws/v1/events/batch"


def _read_lines(sock: socket.socket, buf: bytes, n: int, timeout: float = 10.0) -> tuple[list[bytes], bytes]:
    """``n`` complete lines from the raw body (no chunk framing), and what is left over."""
    deadline = time.monotonic() + timeout
    while buf.count(b"\n") < n:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        data = sock.recv(65536)
        assert data, f"the stream ended early: {buf[-300:]!r}"
        buf += data
    *lines, rest = buf.split(b"\n", n)
    return [line + b"\n" for line in lines], rest


def test_http10_stream_is_plain_ndjson_from_the_stream_writer(server: Server) -> None:
    before = server.state()
    next_id = server.add_events(3)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    try:
        sock.sendall(b"GET /ws/v1/events/stream?count=3 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = sock.recv(65536)
            assert data, "no response headers"
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        status, *header_lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
        assert status.split()[1] == "200"
        assert "chunked" not in headers.get("transfer-encoding", "")
        assert headers["content-type"].startswith("application/json")
        lines, buf = _read_lines(sock, buf, 4)
        assert set(json.loads(lines[0])) == {"InstanceUUID"}
        history = server.get(f"{BATCH}?start={next_id - 3}&count=3").json()["EventRecords"]
        assert [json.loads(line) for line in lines[1:]] == history
        # Live events follow, from the stream writer like every other stream.
        server.add_events(2)
        live, buf = _read_lines(sock, buf, 2)
        assert [json.loads(line) for line in live] == server.get(f"{BATCH}?start={next_id}&count=2").json()["EventRecords"]
        state = server.state()
        assert state["streams"] == before["streams"] + 1
        assert state["attached_streams"] == before["attached_streams"] + 1
    finally:
        sock.close()
    after = server.wait_for(lambda s: s["streams"] == before["streams"], timeout=10.0)
    assert after["streams"] == before["streams"]
