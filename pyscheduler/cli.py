"""The ``pyscheduler`` command.

Subcommands:

- ``pyscheduler bench [FAMILY] [options]``: run benchmarks (see ``pyscheduler bench --help``).
- ``pyscheduler validate-conf FILE``: check a ``queues.yaml`` (``-`` reads standard input);
  prints ``valid`` and the checksum (exit 0), or every error on standard error (exit 1);
  a file that cannot be read exits 2.
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


def _validate_conf(rest: list[str]) -> int:
    """``validate-conf FILE``: parse and validate a queues.yaml without a scheduler."""
    parser = argparse.ArgumentParser(
        prog="pyscheduler validate-conf",
        description="Check a queues.yaml: strict parsing and every validation rule, no scheduler needed. "
        "Prints 'valid' and the checksum, or each error on its own line on standard error.",
    )
    parser.add_argument("file", metavar="FILE", help="the queues.yaml to check, or - for standard input")
    args = parser.parse_args(rest)

    from pyscheduler.config.loader import parse_and_validate
    from pyscheduler.config.validator import ConfigValidationError

    try:
        data = sys.stdin.buffer.read() if args.file == "-" else _read_bytes(args.file)
    except OSError as exc:
        print(f"pyscheduler validate-conf: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Unreadable content is an invalid configuration, not a missing file.
        print(f"{args.file}: not UTF-8 text (byte {exc.start})", file=sys.stderr)
        return 1
    try:
        config = parse_and_validate(text)
    except ConfigValidationError as exc:
        for error in exc.errors:
            print(error, file=sys.stderr)
        return 1
    print("valid")
    print(f"checksum: {config.checksum}")
    return 0


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


_COMMANDS = {
    "bench": (_bench, "run the benchmarks (events memory and throughput; see bench --help)"),
    "validate-conf": (_validate_conf, "check a queues.yaml file (- for stdin): prints 'valid' or the errors"),
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
