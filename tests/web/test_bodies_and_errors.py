"""Request bodies and error answers, as a hostile or broken client meets them (issue 10).

- A body over the limit is refused with 413 whatever its framing (Content-Length or chunked);
  a chunked one used to be cut at 16 MiB and validated as if whole.
- A malformed chunked body is a 400 in YuniKorn's JSON shape, not a 500 with exception text.
- A 500 says "internal error" and an id that matches a log line, never the exception's text.
"""

from __future__ import annotations

import logging
import socket
import time

import pytest
from web_helpers import Server

from pyscheduler_web.http import MAX_BODY_BYTES

VALIDATE = "/ws/v1/validate-conf"


def _raw(server: Server, request: bytes, timeout: float = 30.0) -> tuple[int, bytes]:
    """Sends raw bytes, returns (status, body) of the answer (Connection: close)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            part = sock.recv(1 << 16)
            if not part:
                break
            data += part
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        decoded, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            decoded, rest = decoded + rest[:size], rest[size + 2 :]
        body = decoded
    return status, body


def _chunked(payload_chunks: list[bytes]) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in payload_chunks) + b"0\r\n\r\n"
    return (
        f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
        + body
    )


def test_a_chunked_body_over_the_limit_is_413(server: Server) -> None:
    # A valid-looking start, then padding past the limit: cut and validated it would pass.
    start = b"partitions:\n  - name: default\n    queues:\n      - name: root\n"
    padding = b"#" * (1 << 20)
    chunks = [start] + [padding] * (MAX_BODY_BYTES // len(padding) + 1)
    status, body = _raw(server, _chunked(chunks), timeout=60)
    assert status == 413, body[:200]
    assert b'"status_code":413' in body and b"larger than" in body


def test_a_content_length_over_the_limit_is_413_without_reading_it(server: Server) -> None:
    request = (
        f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\nConnection: close\r\n\r\n"
    ).encode() + b"partitions: []\n"
    status, body = _raw(server, request)
    assert status == 413 and b'"status_code":413' in body


def test_a_chunked_body_under_the_limit_is_validated_whole(server: Server) -> None:
    good = b"partitions:\n  - name: default\n    queues:\n      - name: root\n"
    status, body = _raw(server, _chunked([good[:20], good[20:]]))
    assert status == 200 and b'"allowed":true' in body
    status, body = _raw(server, _chunked([good, b"        bogus: 1\n"]))
    assert status == 200 and b'"allowed":false' in body


@pytest.mark.parametrize("bad", [b"zz\r\nabc\r\n0\r\n\r\n", b"5\r\nabc", b"-3\r\nabc\r\n0\r\n\r\n"])
def test_a_malformed_chunked_body_is_400_without_internals(server: Server, bad: bytes) -> None:
    request = (
        f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode() + bad
    )
    status, body = _raw(server, request)
    assert status == 400, body[:300]
    assert b'"status_code":400' in body
    assert b"Traceback" not in body and b"gunicorn" not in body.lower()
    # The server is fine afterwards.
    assert server.get("/ws/v1/scheduler/healthcheck", timeout=5).status_code == 200


def test_a_500_says_internal_error_and_an_id_that_the_log_has(caplog: pytest.LogCaptureFixture) -> None:
    from pyscheduler_web.app import create_app

    app = create_app(start=False)

    @app.get("/ws/v1/test-broken")
    def broken() -> None:
        raise KeyError("secret internal detail")

    with caplog.at_level(logging.ERROR, logger="pyscheduler_web"):
        response = app.test_client().get("/ws/v1/test-broken")
    assert response.status_code == 500
    body = response.get_json()
    assert body["status_code"] == 500
    assert body["message"].startswith("internal error (id ") and body["message"] == body["description"]
    assert "secret" not in response.get_data(as_text=True) and "KeyError" not in response.get_data(as_text=True)
    error_id = body["message"].removeprefix("internal error (id ").removesuffix(")")
    assert any(error_id in record.getMessage() and record.exc_info for record in caplog.records)


def test_a_chunked_body_with_trailers_is_served_at_once(server: Server) -> None:
    """The body ends after the trailer section: served without waiting for the body deadline
    (30 s) or the client's close (chunk data that looks like a last chunk: test_chunked_scan)."""
    good = b"partitions:\n  - name: default\n    queues:\n      - name: root\n"
    body = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(c), c) for c in [good[:20], good[20:]]) + b"0\r\nX-Checksum: 1\r\n\r\n"
    head = f"POST {VALIDATE} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        began = time.monotonic()
        sock.sendall(head.encode() + body)  # and the socket stays open
        data = b""
        while b"\r\n0\r\n\r\n" not in data and b'"allowed"' not in data:
            part = sock.recv(1 << 16)
            assert part, data
            data += part
        elapsed = time.monotonic() - began
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    assert b'"allowed":true' in data
    assert elapsed < 5.0, elapsed
