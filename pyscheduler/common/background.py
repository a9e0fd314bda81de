"""One helper for every periodic background thread (scheduling loop, history, health checker,
event publisher, demo RM, stream deadlines).

A :class:`BackgroundThread` calls ``step()`` on a named daemon thread, again and again:

- ``step()`` returns True to be called again at once (work is left, e.g. the cycle placed
  something); otherwise the thread sleeps ``interval`` seconds or until :meth:`wake`.
- ``first_delay``: the first call comes at once (0, the default) or after that many seconds
  (a ticker, like YuniKorn's history); ``interval <= 0`` means one call, then the thread ends.
- An exception in ``step()`` is logged with the thread's name and counted (``errors``,
  ``last_error``); the thread goes on. It never dies silently of a failing step.
- :meth:`stop` is clean and idempotent: it wakes the thread, lets the step in progress finish,
  joins it (with a timeout) and then runs ``on_stop`` once, on the caller's thread (a final
  flush). It returns whether the thread ended in time. A stopped helper can be started again.
- ``stopping`` tells a long step that it should return early.

It holds no lock while calling ``step()`` or ``on_stop``, so they may take any lock they need.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["BackgroundThread"]

log = logging.getLogger(__name__)


class BackgroundThread:
    """A named daemon thread calling ``step`` every ``interval`` seconds (see the module doc)."""

    def __init__(
        self,
        name: str,
        step: Callable[[], bool | None],
        *,
        interval: float,
        first_delay: float = 0.0,
        on_stop: Callable[[], object] | None = None,
    ) -> None:
        self.name = name
        self.interval = interval
        self.first_delay = first_delay
        self._step = step
        self._on_stop = on_stop
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Serialises start/stop of this helper; never held while a step runs.
        self._control = threading.Lock()
        #: Steps that raised, and the last one's ``TypeName: message``.
        self.errors = 0
        self.last_error = ""

    def start(self) -> None:
        """Starts the thread (a no-op while it runs)."""
        with self._control:
            if self._thread is not None:
                return
            self._stop.clear()
            self._wake.clear()
            thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread = thread
            thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Ends the thread after its current step, then runs ``on_stop``. True when the thread
        ended within ``timeout`` (or was not running)."""
        with self._control:
            thread, self._thread = self._thread, None
            if thread is None:
                return True
            self._stop.set()
            self._wake.set()
        ended = True
        if thread is not threading.current_thread():
            thread.join(timeout)
            ended = not thread.is_alive()
            if not ended:
                log.warning("%s did not stop within %.1f s", self.name, timeout)
        if self._on_stop is not None:
            self._on_stop()
        return ended

    def wake(self) -> None:
        """The next step runs at once instead of after the interval."""
        # Event.set takes the event's condition lock and notifies (over a microsecond), and the
        # scheduling loop is woken by every allocation it makes itself. A set flag is only
        # cleared by the loop's sleep, after which a step always starts: skipping a second
        # set loses no wake-up.
        if not self._wake.is_set():
            self._wake.set()

    @property
    def running(self) -> bool:
        """Started and not stopped (an ``interval <= 0`` thread may have ended its one step)."""
        return self._thread is not None

    @property
    def thread(self) -> threading.Thread | None:
        """The running thread (its ``native_id`` tells its CPU time apart), None when stopped."""
        return self._thread

    @property
    def alive(self) -> bool:
        """The thread itself is alive."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def stopping(self) -> bool:
        """A stop was asked for: a long step should return early."""
        return self._stop.is_set()

    def _run(self) -> None:
        if self.first_delay > 0 and self._sleep(self.first_delay):
            return
        while not self._stop.is_set():
            try:
                again = self._step()
            except Exception as err:  # a failing step must not end the thread
                self.errors += 1
                self.last_error = f"{type(err).__name__}: {err}"
                log.exception("%s: step failed", self.name)
                again = False
            if self.interval <= 0:
                return
            if not again and self._sleep(self.interval):
                return

    def _sleep(self, seconds: float) -> bool:
        """Waits ``seconds`` or until woken; True when a stop was asked for."""
        self._wake.wait(seconds)
        self._wake.clear()
        return self._stop.is_set()
