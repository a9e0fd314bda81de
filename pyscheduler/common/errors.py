"""Exception hierarchy shared by every pyscheduler module.

Callers that only want to know "did the scheduler reject this?" catch
:class:`SchedulerError`; the subclasses also inherit the matching built-in
exception so that generic code (``except ValueError``) keeps working.
"""

from __future__ import annotations

__all__ = ["ConfigError", "ResourceError", "SchedulerError", "SchedulerRuntimeError", "SchedulerValueError"]


class SchedulerError(Exception):
    """Base class of all errors raised by pyscheduler (native ones included)."""


class SchedulerValueError(SchedulerError, ValueError):
    """A value pyscheduler rejects (the base of the native module's value errors)."""


class SchedulerRuntimeError(SchedulerError, RuntimeError):
    """An operation pyscheduler cannot do in its current state (the native module's base too)."""


class ResourceError(SchedulerValueError):
    """A resource quantity that does not parse or does not fit in int64 (raised by the native
    Resource too, hence defined here with the other bases)."""


class ConfigError(SchedulerError, ValueError):
    """A configuration value was rejected.

    ``key`` and ``value`` identify the offending entry of the configuration
    map when there is a single one; they are ``None`` when the problem is not
    tied to one key (for example an invalid value passed directly to a
    settings constructor). The message is a complete sentence meant for an
    operator reading a log, so it always names the key and the problem.
    """

    key: str | None
    value: str | None

    def __init__(self, message: str, *, key: str | None = None, value: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value

    def __str__(self) -> str:
        # args[0] is the message; the structured fields stay out of str() so
        # that log lines are not duplicated.
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only attributes would be lost by the default pickling of
        # exceptions (which replays only args); keep them across processes.
        return (_rebuild_config_error, (str(self), self.key, self.value))


def _rebuild_config_error(message: str, key: str | None, value: str | None) -> ConfigError:
    """Unpickling helper for :class:`ConfigError`."""
    return ConfigError(message, key=key, value=value)
