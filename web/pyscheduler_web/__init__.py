"""pyscheduler-web: YuniKorn's REST API for pyscheduler, on Flask and gunicorn.

- :func:`pyscheduler_web.app.create_app`: the app factory (starts one scheduler in the process);
- :mod:`pyscheduler_web.gunicorn_conf`: one gthread worker, threads for the event streams;
- :func:`pyscheduler_web.server.serve`: what ``pyscheduler serve`` runs.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pyscheduler-web")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
