"""Following the cluster's resources (client-go's informers, as YuniKorn's shim uses them): each
resource is listed once, then watched from the list's resource version by an :class:`Informer`
on its own :class:`~pyscheduler.common.background.BackgroundThread`, its events handed to the
resource's handler (``handle(kind, object)``: ``ADDED``, ``MODIFIED`` or ``DELETED``; bookmarks
only move the version on).

- A watch that expires (``410 Gone``) lists again (``relist``: the handler reconciles what
  appeared and disappeared meanwhile) and watches from the new version.
- A watch refused with 403 or 404 (its CRD went, or the role changed) lists again too.
- Any other failure (the API server away, a broken answer) is one warning line (its traceback in
  the debug log: an API server away for a while is not worth a traceback a second), a pause of
  :data:`RETRY_DELAY`, then the watch again. A list that fails is tried again the same way.
- A resource the shim can do without (:meth:`Informers.optional_list` gives None: no such
  resource, or the shim may not list it) is looked for again every ``optional_recheck`` seconds
  (a CRD installed after the shim started is followed from then on); said once until it is back.

What resources there are and what their handlers do is the shim's wiring (:mod:`.shim`), not
this module's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from pyscheduler.common.background import BackgroundThread
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.kubeapi import KubeApi, KubeApiError, WatchExpired

__all__ = ["Handler", "Informer", "Informers", "RETRY_DELAY", "Relist", "brief"]

log = logging.getLogger(__name__)

#: Seconds between attempts after a watch or a list failed.
RETRY_DELAY: Final = 1.0

Handler = Callable[[str, dict[str, Any]], None]
#: Lists the resource and reconciles it; its resource version, None for a resource not there.
Relist = Callable[[], str | None]


def brief(exc: BaseException) -> str:
    """An exception as one line: its type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def retrying(relist: Relist, stop: threading.Event, counts: ShimCounts) -> str | None:
    """``relist()`` until it succeeds (one warning line per failure); "" once stopping."""
    while not stop.is_set():
        try:
            counts.relists += 1
            return relist()
        except Exception as exc:
            log.warning("listing failed; again in %g s: %s", RETRY_DELAY, brief(exc))
            log.debug("listing failed", exc_info=True)
            stop.wait(RETRY_DELAY)
    return ""


class Informer:
    """One resource followed from ``version`` (see the module doc). ``stop`` is shared by the
    shim's informers: set it (and close the API's watches) before :meth:`stop`."""

    def __init__(self, api: KubeApi, name: str, path: str, handle: Handler, relist: Relist, *,
                 stop: threading.Event, counts: ShimCounts, watch_timeout: int = 300,
                 optional_recheck: float = 30.0) -> None:
        self.path = path
        self._api = api
        self._handle = handle
        self._relist = relist
        self._stop = stop
        self._counts = counts
        self._watch_timeout = watch_timeout
        self._optional_recheck = optional_recheck
        self._version: str | None = None
        self._thread = BackgroundThread(f"k8s-watch-{name}", self._step, interval=RETRY_DELAY)

    def start(self, version: str | None) -> None:
        """Watches from ``version`` (None: the resource is not there, look for it later)."""
        self._version = version
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop()

    def _step(self) -> bool:
        """One watch (or one look for an absent resource); True to go on at once."""
        if self._stop.is_set():
            return False
        if self._version is None:
            if self._stop.wait(self._optional_recheck):
                return False
            self._version = retrying(self._relist, self._stop, self._counts)
            return True
        path, version = self.path, self._version
        try:
            for kind, obj in self._api.watch(path, version, timeout_seconds=self._watch_timeout, stop=self._stop):
                version = self._version = str((obj.get("metadata") or {}).get("resourceVersion", version))
                if kind != "BOOKMARK":
                    self._handle(kind, obj)
        except WatchExpired:
            log.info("watch %s expired: listing again", path)
            self._version = retrying(self._relist, self._stop, self._counts)
        except KubeApiError as exc:
            if self._stop.is_set():
                return False
            if exc.status not in (403, 404):
                log.warning("watch %s failed; watching again in %g s: %s", path, RETRY_DELAY, exc)
                self._stop.wait(RETRY_DELAY)
                return True
            log.info("watch %s: %s: listing again", path, exc)  # its CRD went, or the role changed
            self._version = retrying(self._relist, self._stop, self._counts)
        except Exception as exc:  # a broken connection or answer: wait, then watch again
            if self._stop.is_set():
                return False
            log.warning("watch %s failed; watching again in %g s: %s", path, RETRY_DELAY, brief(exc))
            log.debug("watch %s failed", path, exc_info=True)
            self._stop.wait(RETRY_DELAY)
        return not self._stop.is_set()


class Informers:
    """The shim's informers, their shared stop, and the optional lists' absence notes."""

    def __init__(self, api: KubeApi, counts: ShimCounts, *, watch_timeout: int, optional_recheck: float) -> None:
        self._api = api
        self._counts = counts
        self._watch_timeout = watch_timeout
        self._optional_recheck = optional_recheck
        self.stopping = threading.Event()
        self._informers: list[tuple[Informer, str | None]] = []
        #: Optional resources found missing (said once until they are back).
        self._absent: set[str] = set()

    def add(self, name: str, path: str, version: str | None, handle: Handler, relist: Relist) -> None:
        """A resource to follow from ``version`` once :meth:`start` runs."""
        informer = Informer(self._api, name, path, handle, relist, stop=self.stopping, counts=self._counts,
                            watch_timeout=self._watch_timeout, optional_recheck=self._optional_recheck)
        self._informers.append((informer, version))

    def start(self) -> None:
        for informer, version in self._informers:
            informer.start(version)

    def stop(self) -> None:
        self.stopping.set()
        self._api.close_watches()
        for informer, _ in self._informers:
            informer.stop()

    def optional_list(self, path: str, what: str) -> tuple[list[dict[str, Any]], str] | None:
        """A list the shim can do without: None when the API server has no such resource (404)
        or the shim's role may not list it (403), said in the log."""
        try:
            listed = self._api.list(path)
        except KubeApiError as exc:
            if exc.status in (403, 404):
                if path not in self._absent:
                    self._absent.add(path)
                    log.warning("%s not followed (%s), looked for again every %g s: %s", what,
                                "no such resource" if exc.status == 404 else "the shim's role may not list them",
                                self._optional_recheck, exc)
                return None
            raise
        if path in self._absent:
            self._absent.discard(path)
            log.info("%s followed from now on", what)
        return listed
