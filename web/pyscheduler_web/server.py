"""``pyscheduler serve``: gunicorn, run from Python.

The command embeds gunicorn through its ``BaseApplication`` instead of exec'ing the
``gunicorn`` script: the options reach the app factory as a Python object (no environment
round trip, no dependence on which ``gunicorn`` is first on ``PATH``), the configuration is
validated before anything forks, and the serving process is the one the user started
(Ctrl-C and SIGTERM go straight to gunicorn's arbiter).

Settings come from :mod:`pyscheduler_web.gunicorn_conf`, then ``GUNICORN_CMD_ARGS`` (any
gunicorn flag, e.g. ``--access-logfile - --timeout 60``), then the command's own flags. A
single worker (the hardened gthread, pyscheduler_web.worker) without preloading is enforced whatever the overrides say: the
scheduler lives in that worker.
"""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

from pyscheduler_web import gunicorn_conf
from pyscheduler_web.service import ServeOptions

__all__ = ["ServiceApplication", "serve"]

#: Settings nobody may override (see the module doc).
ENFORCED: dict[str, Any] = {"workers": 1, "worker_class": "pyscheduler_web.worker.ServingWorker", "preload_app": False}


class ServiceApplication(BaseApplication):  # type: ignore[misc]
    def __init__(self, options: ServeOptions, overrides: dict[str, Any] | None = None) -> None:
        self.options = options
        self.overrides = overrides or {}
        super().__init__(usage=None, prog="pyscheduler serve")

    def load_config(self) -> None:
        for key, value in gunicorn_conf.settings().items():
            self.cfg.set(key, value)
        env_args = self.cfg.parser().parse_args(self.cfg.get_cmd_args_from_env())
        for key, value in vars(env_args).items():
            if value is not None and key != "args":
                self.cfg.set(key.lower(), value)
        for key, value in self.overrides.items():
            self.cfg.set(key, value)
        for key, value in ENFORCED.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # Runs in the worker, after the fork: the scheduler starts there.
        from pyscheduler_web.app import create_app

        return create_app(self.options)


def serve(options: ServeOptions, bind: str | None = None) -> int:
    """Serve until stopped (SIGINT/SIGTERM); the exit status."""
    overrides: dict[str, Any] = {}
    if bind:
        overrides["bind"] = [bind]
    ServiceApplication(options, overrides).run()
    return 0
