"""Locust load test of pyscheduler's REST service (benchmarks.md section 4).

Three kinds of clients, all of them in the default run (a mix, by ``weight``); name classes on
the locust command line to run only some (``locust -f loadtests/locustfile.py BatchPoller``):

- :class:`BatchPoller`: a dashboard polling ``/ws/v1/events/batch`` for what is new
  (``start=`` the id after the last event it saw), and now and then the whole default batch.
- :class:`StreamReader`: opens ``/ws/v1/events/stream?count=N``, reads the body until it has
  the N history events (N is what the ring holds, at most 1000) and closes. Locust's client
  would time a streamed request at its headers, so the stream is read over a plain socket
  (gevent-patched by locust; chunked framing decoded by ``benchmarks.rest``) and
  reported with ``events.request.fire``: the time from connecting to the LAST byte read,
  under ``/ws/v1/events/stream?count<=N [to last byte]``. A second task keeps a live stream
  (``count=0``) open for a few seconds: ``[live Ns]``, its size is the bytes it received.
- :class:`ObjectBrowser`: the object endpoints (partitions, queues, nodes, applications,
  one application, one node, user usage, health, cluster, metrics).

Think times (``wait_time``) model real clients (a dashboard polls about once a second);
``LOADTEST_THINK=0`` (``run.py --no-think``) removes them for a saturation run. Every read is
bounded (timeouts, a deadline and a line budget per stream). ``make loadtest``
(``loadtests/run.py``) starts a served demo scheduler on 127.0.0.1 and runs this file
headless; it can also be run by hand against any server:
``locust -f loadtests/locustfile.py --headless -u 6 -r 3 -t 30s --host http://127.0.0.1:9080``.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from urllib.parse import urlsplit

from locust import HttpUser, between, events, task

from benchmarks.rest import ChunkedLines, open_stream

PARTITION = "default"
#: History events a stream reader replays (at most: a young ring holds fewer).
REPLAY_EVENTS = int(os.environ.get("LOADTEST_REPLAY_EVENTS", "1000"))
#: Seconds a live stream stays open.
LIVE_SECONDS = float(os.environ.get("LOADTEST_LIVE_SECONDS", "3"))
#: Longest a stream read may take before it counts as failed.
STREAM_DEADLINE = 15.0
#: Requests' (connect, read) timeouts.
TIMEOUT = (5.0, 15.0)
POLL_COUNT = 1000
#: Scales every user's think time between tasks (run.py --no-think sets 0: back-to-back requests,
#: a saturation run instead of a realistic client mix).
THINK = float(os.environ.get("LOADTEST_THINK", "1"))


class BatchPoller(HttpUser):
    """Polls the event batch endpoint for new events, about once a second."""

    weight = 3
    wait_time = between(0.5 * THINK, 1.5 * THINK)

    def on_start(self) -> None:
        self.next_id: int | None = None

    @task(5)
    def poll_new_events(self) -> None:
        params: dict[str, Any] = {"count": POLL_COUNT}
        if self.next_id is not None:
            params["start"] = self.next_id
        with self.client.get(
            "/ws/v1/events/batch", params=params, name="/ws/v1/events/batch?start=NEXT&count=1000",
            timeout=TIMEOUT, catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
                return
            try:
                body = response.json()
                lowest, highest = int(body["LowestID"]), int(body["HighestID"])
                records = body["EventRecords"]
            except (ValueError, KeyError, TypeError) as exc:
                response.failure(f"not a batch body: {exc}")
                return
            start = self.next_id if self.next_id is not None else max(lowest, 0)
            if records:
                self.next_id = start + len(records)
            elif highest >= 0 and start < lowest:
                self.next_id = lowest  # fell out of the ring: resume at the oldest held
            elif self.next_id is None:
                self.next_id = max(highest + 1, 0)
            response.success()

    @task(1)
    def full_batch(self) -> None:
        with self.client.get(
            "/ws/v1/events/batch", name="/ws/v1/events/batch (default count)", timeout=TIMEOUT, catch_response=True
        ) as response:
            if response.status_code != 200 or "InstanceUUID" not in response.text[:200]:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
            else:
                response.success()


class StreamReader(HttpUser):
    """Reads event streams to the last byte (replay) and keeps live streams open for a while."""

    weight = 1
    wait_time = between(1.0 * THINK, 2.0 * THINK)

    def _held(self) -> int:
        """Events the ring holds now (a one-event batch says)."""
        with self.client.get(
            "/ws/v1/events/batch?count=1", name="/ws/v1/events/batch?count=1 (ring size)", timeout=TIMEOUT,
            catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")
                return 0
            body = response.json()
            response.success()
            lowest, highest = int(body["LowestID"]), int(body["HighestID"])
            return 0 if highest < 0 else highest - lowest + 1

    def _read_stream(self, name: str, query: str, want_lines: int | None, seconds: float | None) -> None:
        """GET the stream over a plain socket and read it until ``want_lines`` lines (the
        InstanceUUID line included) or for ``seconds``; one request event, timed from
        connecting to the last byte read."""
        started = time.perf_counter()
        deadline = started + (seconds if seconds is not None else STREAM_DEADLINE)
        url = urlsplit(self.host)
        decoder: ChunkedLines | None = None
        exception: BaseException | None = None
        sock = None
        try:
            sock, decoder = open_stream(url.port or 80, query, timeout=TIMEOUT[0], host=url.hostname or "127.0.0.1")
            while want_lines is None or decoder.lines < want_lines:
                if decoder.finished:
                    if want_lines is not None:
                        raise RuntimeError(f"the stream ended after {decoder.lines} lines")
                    break
                left = deadline - time.perf_counter()
                if left <= 0:
                    if want_lines is not None:
                        raise TimeoutError(f"{decoder.lines} of {want_lines} lines within {STREAM_DEADLINE:g} s")
                    break
                sock.settimeout(left)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue  # the deadline check above decides
                if not data:
                    raise EOFError(f"connection closed after {decoder.lines} lines")
                decoder.feed(data)
            ended = time.perf_counter()
        except Exception as exc:  # reported as this request's failure
            exception = exc
            ended = time.perf_counter()
        finally:
            if sock is not None:
                sock.close()  # the server notices and frees the stream slot
        events.request.fire(
            request_type="GET",
            name=name,
            response_time=(ended - started) * 1000.0,
            response_length=decoder.body_bytes if decoder is not None else 0,
            response=None,
            context={},
            exception=exception,
        )

    @task(3)
    def replay_to_last_byte(self) -> None:
        count = min(REPLAY_EVENTS, self._held())
        if count <= 0:
            return
        # Named by the budget, not the count of the moment: one line of statistics.
        self._read_stream(
            f"/ws/v1/events/stream?count<={REPLAY_EVENTS} [to last byte]", f"count={count}", count + 1, None
        )

    @task(1)
    def live_stream(self) -> None:
        self._read_stream(f"/ws/v1/events/stream [live {LIVE_SECONDS:g}s]", "count=0", None, LIVE_SECONDS)


class ObjectBrowser(HttpUser):
    """The object endpoints a UI or CLI reads."""

    weight = 2
    wait_time = between(0.5 * THINK, 1.5 * THINK)

    def _get(self, path: str, name: str | None = None) -> Any:
        with self.client.get(path, name=name or path, timeout=TIMEOUT, catch_response=True) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}: {response.text[:200]}")
                return None
            response.success()
            if response.headers.get("Content-Type", "").startswith("application/json"):
                return response.json()
            return None

    @task(2)
    def partitions(self) -> None:
        self._get("/ws/v1/partitions")

    @task(3)
    def queues(self) -> None:
        self._get(f"/ws/v1/partition/{PARTITION}/queues")

    @task(2)
    def nodes(self) -> None:
        nodes = self._get(f"/ws/v1/partition/{PARTITION}/nodes")
        if nodes:
            node = random.choice(nodes)["nodeID"]
            self._get(f"/ws/v1/partition/{PARTITION}/node/{node}", f"/ws/v1/partition/{PARTITION}/node/[node]")

    @task(3)
    def applications(self) -> None:
        active = f"/ws/v1/partition/{PARTITION}/applications/active"
        apps = self._get(active)
        if not apps:
            return
        app = random.choice(apps)
        path = f"/ws/v1/partition/{PARTITION}/queue/{app['queueName']}/application/{app['applicationID']}"
        name = f"/ws/v1/partition/{PARTITION}/queue/[queue]/application/[app]"
        with self.client.get(path, name=name, timeout=TIMEOUT, catch_response=True) as response:
            if response.status_code == 200:
                response.success()
                return
            if response.status_code == 404:
                # The demo removes finished applications: one listed a moment ago may be gone.
                # A 404 is an error only while the application is still listed as active.
                again = self.client.get(active, name=f"{active} (recheck after a 404)", timeout=TIMEOUT)
                listed = again.status_code == 200 and any(
                    a.get("applicationID") == app["applicationID"] for a in again.json()
                )
                if not listed:
                    response.success()
                    return
            response.failure(f"HTTP {response.status_code}: {response.text[:200]}")

    @task(1)
    def users(self) -> None:
        self._get(f"/ws/v1/partition/{PARTITION}/usage/users")

    @task(1)
    def health(self) -> None:
        self._get("/ws/v1/scheduler/healthcheck")

    @task(1)
    def clusters(self) -> None:
        self._get("/ws/v1/clusters")

    @task(1)
    def metrics(self) -> None:
        self._get("/ws/v1/metrics")
