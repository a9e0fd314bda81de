"""Errors of the query functions: the HTTP status and YuniKorn's exact message.

The web layer turns a :class:`DAOError` into YuniKorn's error body
``{"status_code": e.status, "message": e.message, "description": e.message}``.
"""

from __future__ import annotations

from pyscheduler.common.errors import SchedulerError

__all__ = [
    "BadRequest",
    "DAOError",
    "NotFound",
    "PARTITION_NOT_FOUND",
    "partition_ambiguous",
    "QUEUE_NOT_FOUND",
    "APPLICATION_NOT_FOUND",
    "NODE_NOT_FOUND",
    "USER_NOT_FOUND",
    "GROUP_NOT_FOUND",
    "ROLE_HISTORY_NOT_FOUND",
    "INVALID_USER_NAME",
    "INVALID_GROUP_NAME",
    "USER_NAME_MISSING",
    "GROUP_NAME_MISSING",
    "MISSING_PARAMETERS",
    "INVALID_QUEUE_NAME",
    "ALLOWED_STATES",
    "ALLOWED_QUEUE_STATES",
    "ALLOWED_ACTIVE_STATUSES",
    "HEALTH_CHECK_NOT_AVAILABLE",
    "HISTORY_NOT_ENABLED",
]

# YuniKorn's texts (pkg/webservice/handlers.go, pkg/common/errors.go).
PARTITION_NOT_FOUND = "Partition not found"
QUEUE_NOT_FOUND = "Queue not found"
APPLICATION_NOT_FOUND = "Application not found"
NODE_NOT_FOUND = "Node not found"
USER_NOT_FOUND = "User not found"
GROUP_NOT_FOUND = "Group not found"
#: pyscheduler's own (role history is not in YuniKorn).
ROLE_HISTORY_NOT_FOUND = "Role history not found"
INVALID_USER_NAME = "Invalid user name"
INVALID_GROUP_NAME = "Invalid group name"
USER_NAME_MISSING = "User name is missing"
GROUP_NAME_MISSING = "Group name is missing"
MISSING_PARAMETERS = "Missing parameters"
INVALID_QUEUE_NAME = (
    "invalid queue name, max 64 characters consisting of alphanumeric characters and "
    "'-', '_', '#', '@', '/', ':' allowed"
)
ALLOWED_STATES = "Only following application states are allowed: active, rejected, completed"
ALLOWED_QUEUE_STATES = "Only following application states are allowed: active"
#: YuniKorn joins the statuses from a Go map, so its order varies run to run; this is the
#: state machine's order, fixed.
ALLOWED_ACTIVE_STATUSES = (
    "Only following active statuses are allowed: new,accepted,running,completing,failing,resuming"
)
HEALTH_CHECK_NOT_AVAILABLE = "Health check is not available"
HISTORY_NOT_ENABLED = "Internal metrics collection is not enabled."


def partition_ambiguous(name: str, qualified: list[str]) -> str:
    """pyscheduler's own 400 text (YuniKorn has one RM): a plain partition name that several
    RMs (clusters) have, and the qualified names that reach each."""
    return f"Partition {name} is ambiguous: use one of {', '.join(qualified)}"


class DAOError(SchedulerError):
    """A query the REST layer answers with an error: ``status`` is the HTTP status code and
    ``message`` YuniKorn's text (also the body's ``description``). 500 unless a subclass says."""

    status: int = 500

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.message, self.status))


class NotFound(DAOError):
    """404: the partition, queue, application, node, user or group does not exist."""

    status = 404


class BadRequest(DAOError):
    """400: a malformed parameter (queue name, state, status, user or group name)."""

    status = 400


def _rebuild(cls: type[DAOError], message: str, status: int) -> DAOError:
    return cls(message, status)
