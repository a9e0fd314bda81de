"""``python -m pyscheduler``: the ``pyscheduler`` command (pyscheduler.cli)."""

from pyscheduler.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
