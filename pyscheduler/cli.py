"""The ``pyscheduler`` command.

Subcommands:

- ``pyscheduler bench [FAMILY] [options]``: run benchmarks (see ``pyscheduler bench --help``).
- ``pyscheduler version``: print the package and native-module versions.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _version(_: list[str]) -> int:
    import pyscheduler
    from pyscheduler import _native

    print(f"pyscheduler {pyscheduler.__version__} (native {_native.__version__})")
    return 0


def _bench(rest: list[str]) -> int:
    from pyscheduler.bench.__main__ import main as bench_main

    return bench_main(rest)


_COMMANDS = {
    "bench": (_bench, "run the benchmarks (events memory and throughput; see bench --help)"),
    "version": (_version, "print the package and native-module versions"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyscheduler",
        description="pyscheduler: a YuniKorn-style resource scheduler core with Rust hot paths.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in _COMMANDS.items():
        # Each subcommand parses its own options, so they are passed through untouched.
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    known, rest = parser.parse_known_args(args[:1])
    handler, _ = _COMMANDS[known.command]
    return handler(rest + args[1:])


if __name__ == "__main__":
    sys.exit(main())
