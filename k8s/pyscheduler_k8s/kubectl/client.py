"""The scheduler's REST API as the plugin calls it: JSON GETs and the NDJSON event stream.

One :class:`SchedulerClient` per run, given the base URL the API's ``/ws/v1`` paths hang from
(the server itself, or the API server's service proxy path) and the headers and TLS context to
reach it with (:mod:`.reach` builds both). Failures are :class:`SchedulerError`: the HTTP status
(0 when the server could not be reached) and the server's message (YuniKorn's error body's
``message`` when it sent one).
"""

from __future__ import annotations

import ssl
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson
import urllib3

__all__ = ["SchedulerClient", "SchedulerError"]

REQUEST_TIMEOUT: Final = 30.0


class SchedulerError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


def _message(status: int, body: bytes) -> SchedulerError:
    message = body[:1000].decode(errors="replace").strip()
    try:
        decoded = orjson.loads(body)
        if isinstance(decoded, dict) and decoded.get("message"):
            message = str(decoded["message"])
    except orjson.JSONDecodeError:
        pass
    return SchedulerError(status, message)


class SchedulerClient:
    """Calls to one scheduler. ``where`` names it in messages (the URL or the service)."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None,
                 tls: ssl.SSLContext | None = None, where: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.where = where or self.base_url
        self._headers = {"Accept": "application/json", **(headers or {})}
        options: dict[str, Any] = {"retries": False}
        if tls is not None:
            options["ssl_context"] = tls
            options["cert_reqs"] = "CERT_NONE" if tls.verify_mode == ssl.CERT_NONE else "CERT_REQUIRED"
        self._pool = urllib3.PoolManager(**options)

    def _url(self, path: str, params: Mapping[str, Any] | None) -> str:
        query = {k: str(v) for k, v in (params or {}).items() if v is not None}
        return self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")

    def _send(self, path: str, params: Mapping[str, Any] | None, *, stream: bool,
              read_timeout: float | None) -> urllib3.BaseHTTPResponse:
        try:
            return self._pool.request("GET", self._url(path, params), headers=self._headers, redirect=False,
                                      preload_content=not stream,
                                      timeout=urllib3.Timeout(connect=REQUEST_TIMEOUT, read=read_timeout))
        except urllib3.exceptions.HTTPError as exc:
            raise SchedulerError(0, f"cannot reach the scheduler at {self.where}: {exc}") from exc

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """The decoded JSON answer of ``GET path``."""
        answer = self._send(path, params, stream=False, read_timeout=REQUEST_TIMEOUT)
        if answer.status >= 300:
            raise _message(answer.status, answer.data)
        try:
            return orjson.loads(answer.data)
        except orjson.JSONDecodeError as exc:
            raise SchedulerError(answer.status, f"{path}: not JSON: {answer.data[:200]!r}") from exc

    def stream(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Each JSON line of an NDJSON answer as it comes, until the server ends it (no read
        timeout: a quiet stream is not an error)."""
        answer = self._send(path, params, stream=True, read_timeout=None)
        try:
            if answer.status >= 300:
                raise _message(answer.status, answer.read())
            pending = b""
            try:
                for chunk in answer.stream(65536):
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()
                    for line in lines:
                        if line.strip():
                            yield orjson.loads(line)
            except urllib3.exceptions.HTTPError as exc:
                raise SchedulerError(0, f"the stream from {self.where} broke: {exc}") from exc
        finally:
            answer.release_conn()
            answer.close()

    # The REST API's calls the plugin makes.

    def queues(self, partition: str) -> dict[str, Any]:
        return dict(self.get(f"/ws/v1/partition/{_part(partition)}/queues"))

    def nodes(self, partition: str) -> list[dict[str, Any]]:
        return list(self.get(f"/ws/v1/partition/{_part(partition)}/nodes"))

    def application(self, partition: str, app_id: str) -> dict[str, Any]:
        return dict(self.get(f"/ws/v1/partition/{_part(partition)}/application/{_part(app_id)}"))

    def events_batch(self, count: int | None = None, start: int | None = None) -> dict[str, Any]:
        return dict(self.get("/ws/v1/events/batch", {"count": count, "start": start}))

    def event_stream(self, count: int | None = None) -> Iterator[dict[str, Any]]:
        return self.stream("/ws/v1/events/stream", {"count": count})

    def why(self, partition: str, app_id: str, *, ask: str | None = None, nodes: bool = True) -> dict[str, Any]:
        params = {"ask": ask, "nodes": None if nodes else "false"}
        return dict(self.get(f"/ws/v1/partition/{_part(partition)}/application/{_part(app_id)}/why", params))

    def pending(self, partition: str, *, queue: str | None = None, limit: int | None = None,
                offset: int | None = None) -> list[dict[str, Any]]:
        return list(self.get(f"/ws/v1/partition/{_part(partition)}/pending",
                             {"queue": queue, "limit": limit, "offset": offset}))

    def preempted(self, partition: str, app_id: str, allocation_key: str) -> dict[str, Any]:
        return dict(self.get(f"/ws/v1/partition/{_part(partition)}/application/{_part(app_id)}/preempted",
                             {"allocationKey": allocation_key}))


def _part(segment: str) -> str:
    """One path segment, escaped (an application id may hold any character)."""
    return urllib.parse.quote(segment, safe="")
