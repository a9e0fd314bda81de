"""What a test RM embedded in the served process (``--rm <module>:attach``) returns: the RM,
and the test-only Flask blueprints it adds to the served app.

The served scheduler mounts routes its RMs declare (``pyscheduler.service.Route``: GET, JSON);
the test RMs need more (POST, query parameters), so they are Flask extensions
(:class:`pyscheduler_web.rm_routes.FlaskExtensionRM`): ``init_app`` registers their blueprints
once the service has started. Stopping it stops the RM when the RM can be stopped.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask


class WithTestRoutes:
    def __init__(self, rm: Any, *blueprints: Blueprint) -> None:
        self.rm = rm
        self._blueprints = blueprints

    def init_app(self, app: Flask) -> None:
        for blueprint in self._blueprints:
            app.register_blueprint(blueprint)

    def stop(self) -> None:
        stop = getattr(self.rm, "stop", None)
        if callable(stop):
            stop()
