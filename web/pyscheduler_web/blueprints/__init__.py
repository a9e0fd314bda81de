"""The REST routes, one blueprint per resource family.

Handlers only translate HTTP to the query functions of :mod:`pyscheduler.dao` (which build
the DAO dicts from values copied under the partition's lock) and back: path and query parameters in, a JSON
body (or a YuniKorn error) out. Each blueprint's module doc lists its routes.

A ``<partition>`` path parameter is passed as the router decoded it: the plain name
(``default``) or the qualified ``[clusterId]name``, brackets sent raw or URL-encoded
(``%5Beast%5Ddefault``); :func:`pyscheduler.dao._common.find_partition` resolves it (a plain
name several RMs have is a 400 naming the qualified names).
"""

from __future__ import annotations

from flask import Blueprint

from pyscheduler_web.blueprints.common import ctx, dao, get_json, service

__all__ = ["all_blueprints", "ctx", "dao", "get_json", "service"]


def all_blueprints() -> list[Blueprint]:
    """Every blueprint of the service, in registration order."""
    from pyscheduler_web.blueprints import (
        applications,
        debug,
        events,
        nodes,
        partitions,
        queues,
        reporters,
        scheduler,
        usage,
        whatif,
        why,
    )
    # The web console (HTML pages at /ui/), served beside the API under the same rules.
    from pyscheduler_web.console import bp as console_bp

    return [
        scheduler.bp,
        partitions.bp,
        queues.bp,
        nodes.bp,
        applications.bp,
        usage.bp,
        events.bp,
        reporters.bp,
        debug.bp,
        why.bp,
        whatif.bp,
        console_bp,
    ]

