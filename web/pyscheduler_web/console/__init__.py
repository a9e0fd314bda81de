"""The web console: server-rendered HTML pages at ``/ui/`` over the same query functions the
REST blueprints call (:mod:`pyscheduler.dao`), for people rather than programs.

Pages (each takes ``?partition=`` with a plain or ``[clusterId]name`` partition name; the first
partition when absent):

- ``GET /ui/``: the partition and its queue tree, with guaranteed / max / used per resource
  (:mod:`.queues`)
- ``GET /ui/pending``: the pending applications in the order the scheduler visits them, with
  the "why" summary when the core answers it (:mod:`.pending`)
- ``GET /ui/why?app=``: one application's "why" answer in full (:mod:`.why`)
- ``GET /ui/nodes``: a heat map of the nodes by the use of their dominant resource (:mod:`.nodes`)
- ``GET /ui/events``: the newest events of the ring, newest first, ``?type=`` filters
  (:mod:`.events`)
- ``GET /ui/roles``: role histories (``?key=``) (:mod:`.roles`)
- ``GET /ui/reporters``: the node reporter plugins (:mod:`.reporters`)
- ``GET /ui/static/console.css`` and ``favicon.svg``: the stylesheet and the icon

Contract: GET only (no form changes anything); everything rendered is escaped (Jinja
autoescape: values never reach markup unescaped); no script at all and no inline style, which a
strict ``Content-Security-Policy`` on every answer enforces (bars and heat-map cells are sized
and coloured by CSS classes); nothing is fetched from anywhere but this service. The pages are
served by the same gunicorn worker as the API, so its limits (request size, slow-client
pacing, the read pacer in front of the partition's lock) apply unchanged. An unknown partition
or history key is an HTML error page with the status the API would answer.
"""

from __future__ import annotations

from pyscheduler_web.console import events, nodes, pending, queues, reporters, roles, why
from pyscheduler_web.console.common import bp

__all__ = ["bp"]

# Each page module registers its routes on ``bp`` when imported.
PAGE_MODULES = (queues, pending, why, nodes, events, roles, reporters)
