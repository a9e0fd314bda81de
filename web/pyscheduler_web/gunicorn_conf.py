"""gunicorn configuration of the REST service.

Use it directly (``gunicorn -c python:pyscheduler_web.gunicorn_conf``, the app factory and
the options then come from the environment, see :meth:`ServeOptions.from_env`) or through
``pyscheduler serve``, which applies the same settings programmatically.

- **One worker.** The scheduler lives in the worker (the factory runs there, after the fork);
  a second worker would hold a second, unrelated scheduler.
- **gthread, many threads.** Each open event stream holds a thread for its whole life, so the
  pool has room for ``event.maxStreams`` (YuniKorn's default 100) streams plus
  :data:`REQUEST_THREADS` for ordinary requests. At start the worker tells the stream registry
  how many threads it may use for streams (``threads`` minus the ordinary share), so a
  ``maxStreams`` raised later by a configuration reload can never take every thread.
  Idle threads cost little: the pool starts them on demand.
- **Long streams and the worker timeout.** gunicorn's ``timeout`` kills a worker that stops
  notifying the arbiter. The gthread worker notifies from its main loop, which never waits on
  a request thread, so a stream of any length does not trip it; it still catches a worker
  whose main loop hangs.
- **Shutdown.** On SIGTERM the worker stops accepting and waits up to ``graceful_timeout``
  (5 s, YuniKorn's graceful shutdown) for open requests. Streams would never finish on their
  own, so the SIGTERM, SIGINT and SIGQUIT paths first tell the service to shut down: every
  stream writes YuniKorn's closing line and ends within about 100 ms. The worker's exit hook
  then stops the scheduler (an ``atexit`` handler in the factory covers other exits).
- **Logging**: the scheduler's records (``pyscheduler``, ``pyscheduler_web``, and the Kubernetes
  shim's ``pyscheduler_k8s``: which replica leads, a released Lease) go to gunicorn's error log at
  its level.
- **Connections.** Idle, kept-alive and half-sent connections wait in the worker's poller and
  cost no thread, so the worker holds up to ``PYSCHEDULER_MAX_CONNECTIONS`` (default
  :data:`DEFAULT_MAX_CONNECTIONS`, 4,096) at once; past it a new connection gets a JSON 503
  at once. The process's open-file limit is raised (soft up to the hard limit) to fit; if the
  hard limit is lower, the cap is lowered to fit it, with a warning. One client address may
  hold at most ``PYSCHEDULER_MAX_CONNECTIONS_PER_ADDRESS`` (256) of them, so that one host
  cannot lock out the others (:mod:`pyscheduler_web.worker`).
- **No control socket**: ``gunicornc`` could add workers.
- **Bind** ``127.0.0.1:9080`` by default (YuniKorn's port, loopback only);
  ``PYSCHEDULER_BIND`` or ``--bind`` changes it.
"""

from __future__ import annotations

import logging
import os
import resource
import signal
import sys
from typing import Any

__all__ = [
    "DEFAULT_BIND",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_STREAMS",
    "connection_cap",
    "REQUEST_THREADS",
    "settings",
    "stream_budget",
]

#: YuniKorn listens on :9080; the service binds to the loopback interface unless told otherwise.
DEFAULT_BIND = "127.0.0.1:9080"
#: YuniKorn's ``event.maxStreams`` default: the streams the thread pool is sized for.
DEFAULT_MAX_STREAMS = 100
#: Threads kept for ordinary (non-stream) requests.
REQUEST_THREADS = 16

#: Connections the worker holds at once by default (``PYSCHEDULER_MAX_CONNECTIONS``).
DEFAULT_MAX_CONNECTIONS = 4096
#: Descriptors kept for everything but client connections (logs, the listener, pipes,
#: the event streams' duplicates: one per stream).
FD_RESERVE = 512


def connection_cap(wanted: int) -> int:
    """The connection cap for ``wanted``: the open-file limit is raised to fit it (up to the
    hard limit); what the limit cannot fit is given up, with a warning."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < need:
        cap = max(soft - FD_RESERVE, 64)
        print(
            f"pyscheduler: the open-file limit ({soft}) fits {cap} connections, not {wanted}: "
            "raise it (ulimit -n) to hold more",
            file=sys.stderr,
        )
        return cap
    return wanted


def _max_connections() -> int:
    raw = os.environ.get("PYSCHEDULER_MAX_CONNECTIONS", "")
    if raw == "":
        return DEFAULT_MAX_CONNECTIONS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise SystemExit(f"PYSCHEDULER_MAX_CONNECTIONS must be a positive integer, not {raw!r}")
    return value


bind = os.environ.get("PYSCHEDULER_BIND", DEFAULT_BIND)
workers = 1
# gunicorn's threaded worker, hardened against slow and idle clients (pyscheduler_web.worker).
worker_class = "pyscheduler_web.worker.ServingWorker"
threads = int(os.environ.get("PYSCHEDULER_WEB_THREADS", DEFAULT_MAX_STREAMS + REQUEST_THREADS))
# Kept-alive and pending connections wait in the poller, not in threads.
worker_connections = connection_cap(_max_connections())
timeout = 30
graceful_timeout = 5
keepalive = 5
# The worker bounds the whole request head (1 MiB, Go's limit); gunicorn's per-line and
# per-field limits (4 KiB and 8 KiB) would refuse heads YuniKorn's server takes. 0: no line
# limit of gunicorn's own; a field may be as long as the whole head.
limit_request_line = 0
limit_request_field_size = 1 << 20
limit_request_fields = 32768
preload_app = False
wsgi_app = "pyscheduler_web.app:create_app()"
proc_name = "pyscheduler-web"
# gunicorn's control socket (``gunicornc``) can change the worker count at run time, which
# would start a second scheduler; it also lands in the home directory by default. Off.
control_socket_disable = True


def stream_budget(thread_count: int) -> int:
    """Streams a pool of ``thread_count`` threads can hold while keeping threads for ordinary
    requests (:data:`REQUEST_THREADS`, or half the pool when it is small)."""
    return max(1, thread_count - min(REQUEST_THREADS, thread_count // 2))


def _state(worker: Any) -> Any:
    app = getattr(worker, "wsgi", None)
    extensions = getattr(app, "extensions", None) or {}
    return extensions.get("pyscheduler")


def post_fork(server: Any, worker: Any) -> None:
    """In the new worker, before the app loads: the scheduler's log records go to gunicorn's
    error log, with its level (unless logging was configured otherwise)."""
    error_log = worker.log.error_log
    for name in ("pyscheduler", "pyscheduler_web", "pyscheduler_k8s"):
        logger = logging.getLogger(name)
        if logger.handlers:
            continue
        for handler in error_log.handlers:
            logger.addHandler(handler)
        logger.setLevel(error_log.level)
        logger.propagate = False


def post_worker_init(worker: Any) -> None:
    state = _state(worker)
    if state is None:
        return
    state.streams.set_thread_budget(stream_budget(worker.cfg.threads))
    service = state.service
    graceful = worker.handle_exit
    quick = worker.handle_quit

    def handle_exit(sig: int, frame: Any) -> None:
        service.begin_shutdown()
        graceful(sig, frame)

    def handle_quit(sig: int, frame: Any) -> None:
        service.begin_shutdown()
        quick(sig, frame)

    # The worker installed its handlers before loading the app; chain ours in front.
    signal.signal(signal.SIGTERM, handle_exit)
    signal.signal(signal.SIGINT, handle_quit)
    signal.signal(signal.SIGQUIT, handle_quit)


def worker_exit(server: Any, worker: Any) -> None:
    state = _state(worker)
    if state is not None:
        state.service.stop()


def settings() -> dict[str, Any]:
    """This module's gunicorn settings and hooks, as a dict (for ``pyscheduler serve``)."""
    names = (
        "bind",
        "workers",
        "worker_class",
        "threads",
        "worker_connections",
        "timeout",
        "graceful_timeout",
        "keepalive",
        "limit_request_line",
        "limit_request_field_size",
        "limit_request_fields",
        "preload_app",
        "proc_name",
        "control_socket_disable",
        "post_fork",
        "post_worker_init",
        "worker_exit",
    )
    module = globals()
    return {name: module[name] for name in names}
