"""What the REST service serves: the core's :class:`~pyscheduler.service.SchedulerService`,
built from :class:`ServeOptions`.

The scheduler itself (RM proxy, cluster context, loop, history, health checks, reporters,
the RMs named with ``--rm module:callable``) is the core's entry point,
:mod:`pyscheduler.service`; this module only adds what is the web's own:

- :class:`ServeOptions`: the core options plus the demo switch, from the command line
  (``pyscheduler serve``) or the environment (:meth:`ServeOptions.from_env`, for a bare
  ``gunicorn -c python:pyscheduler_web.gunicorn_conf``);
- :func:`build_service`: the service those options describe, with the demo RM
  (``--demo``, :func:`pyscheduler_web.demo.attach_demo`) attached through the same
  ``attach`` as any RM.

The app factory (:func:`pyscheduler_web.app.create_app`) starts the service in the gunicorn
worker and mounts the routes its RMs declare; the worker's exit hook stops it and, as a
fallback, so does interpreter exit. How to write an RM to embed: :mod:`pyscheduler.service`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyscheduler.service import CoreOptions, SchedulerService
from pyscheduler.service.options import env_flag

__all__ = ["DEFAULT_DEMO_SEED", "DEMO_TERMINATED_TIMEOUT", "ServeOptions", "SchedulerService", "build_service"]

#: The demo expires terminated applications after an hour (YuniKorn: 3 days) so an endless
#: demo does not grow without bound.
DEMO_TERMINATED_TIMEOUT = 3600.0
#: The demo workload's seed unless told otherwise.
DEFAULT_DEMO_SEED = 1


@dataclass(frozen=True)
class ServeOptions:
    """What to serve: the scheduler (``core``) and whether to attach the demo RM."""

    core: CoreOptions = field(default_factory=CoreOptions)
    #: Attach the demo RM (a small simulated cluster kept busy).
    demo: bool = False
    demo_seed: int = DEFAULT_DEMO_SEED

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServeOptions:
        """The core's variables (:meth:`CoreOptions.from_env`), ``PYSCHEDULER_DEMO`` (1/true) and
        ``PYSCHEDULER_DEMO_SEED``."""
        env = os.environ if environ is None else environ
        return cls(
            core=CoreOptions.from_env(env),
            demo=env_flag(env.get("PYSCHEDULER_DEMO", "")),
            demo_seed=int(env.get("PYSCHEDULER_DEMO_SEED", DEFAULT_DEMO_SEED)),
        )

    def to_env(self) -> dict[str, str]:
        """The environment :meth:`from_env` reads back into these options."""
        return {
            **self.core.to_env(),
            "PYSCHEDULER_DEMO": "1" if self.demo else "0",
            "PYSCHEDULER_DEMO_SEED": str(self.demo_seed),
        }

    def core_options(self) -> CoreOptions:
        """The core options to build the service from: with the demo, terminated applications
        expire after :data:`DEMO_TERMINATED_TIMEOUT` unless a timeout was given."""
        if self.demo and self.core.terminated_timeout is None:
            return dataclasses.replace(self.core, terminated_timeout=DEMO_TERMINATED_TIMEOUT)
        return self.core


def build_service(options: ServeOptions) -> SchedulerService:
    """The (not yet started) service ``options`` describe, the demo RM attached when asked
    (before the ``--rm`` RMs)."""
    service = SchedulerService(options.core_options())
    if options.demo:
        from pyscheduler_web.demo import attach_demo

        seed = options.demo_seed
        service.attach(lambda svc: attach_demo(svc, seed), name="demo RM")
    return service
