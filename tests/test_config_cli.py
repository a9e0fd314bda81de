"""Tests for ``pyscheduler validate-conf``, run as a real ``python -m pyscheduler.cli`` process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pyscheduler.cli import build_parser, main
from pyscheduler.config import DEFAULT_CONFIG, checksum

REPO = Path(__file__).resolve().parent.parent

VALID = """\
partitions:
  - name: default
    placementrules:
      - {name: tag, value: namespace, create: true, parent: {name: fixed, value: root.tenants}}
      - {name: fixed, value: root.default}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources: {max: {memory: 10Gi, vcore: 4}}
          - name: tenants
            parent: true
            childtemplate: {maxapplications: 5, resources: {max: {memory: 1G, vcore: 500m}}}
"""

# Two structural errors: reported together, one per line.
UNPARSABLE = """\
partitions:
  - name: default
    colour: blue
    queues:
      - name: root
        queues:
          - {name: a, resources: {max: {memory: 5m}}}
"""

# Parses, but breaks two validation rules.
INVALID = """\
partitions:
  - queues:
      - name: root
        resources: {max: {memory: 1G}}
        queues:
          - {name: "bad name"}
"""


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pyscheduler.cli validate-conf ARGS`` in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-m", "pyscheduler.cli", "validate-conf", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    )


def write(tmp_path: Path, text: str | bytes, name: str = "queues.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_valid_file_prints_valid_and_checksum(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, VALID)))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"valid\nchecksum: {checksum(VALID)}\n"
    assert result.stderr == ""


def test_structural_errors_each_on_their_own_line(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, UNPARSABLE)))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("partitions[0].colour (line 3): unknown key 'colour'")
    assert lines[1].startswith("partitions[0].queues[0].queues[0].resources.max.memory (line 7): ")
    assert "only allowed for vcore" in lines[1]


def test_validation_errors_each_on_their_own_line(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, INVALID)))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert (
        lines[0].startswith("partitions[0].queues[0].resources: ") and "root queue may not have resources" in lines[0]
    )
    assert (
        lines[1].startswith("partitions[0].queues[0].queues[0].name: ") and "invalid queue name 'bad name'" in lines[1]
    )


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    result = run_cli(str(missing))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == f"pyscheduler validate-conf: cannot read {missing}: No such file or directory"


def test_stdin_with_dash() -> None:
    valid = run_cli("-", stdin=VALID.encode())
    assert (valid.returncode, valid.stdout) == (0, f"valid\nchecksum: {checksum(VALID)}\n")
    invalid = run_cli("-", stdin=INVALID.encode())
    assert invalid.returncode == 1 and len(invalid.stderr.splitlines()) == 2


def test_empty_file_is_the_default_config(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, "")))
    assert result.returncode == 0
    assert result.stdout == f"valid\nchecksum: {checksum(DEFAULT_CONFIG)}\n"


def test_yaml_syntax_error(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, "partitions:\n  - name: [\n")))
    assert result.returncode == 1
    assert "invalid YAML" in result.stderr and result.stderr.startswith("line ")


def test_non_utf8_file_is_invalid(tmp_path: Path) -> None:
    result = run_cli(str(write(tmp_path, b"partitions: [{name: \xff}]\n")))
    assert result.returncode == 1
    assert "not UTF-8" in result.stderr


def test_file_argument_is_required() -> None:
    result = run_cli()
    assert result.returncode == 2
    assert "FILE" in result.stderr


# -- in process: the command table and main() ---------------------------------------------------


def test_command_is_listed_in_the_main_parser() -> None:
    assert "validate-conf" in build_parser().format_help()


def test_main_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate-conf", str(write(tmp_path, VALID))]) == 0
    assert capsys.readouterr().out.startswith("valid\n")
    assert main(["validate-conf", str(write(tmp_path, INVALID, "bad.yaml"))]) == 1
    assert "root queue may not have resources" in capsys.readouterr().err
    assert main(["validate-conf", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


PREEMPTION_WARNINGS = """
partitions:
  - name: default
    queues:
      - name: root
        properties: {preemption.policy: Fence}
        queues:
          - name: a
            properties: {preemption.policy: weird, preemption.delay: "-5s", quota.preemption.delay: soon}
          - name: b
            properties: {preemption.delay: 10s, quota.preemption.delay: 1m}
"""


def test_invalid_preemption_values_are_warnings_as_yunikorn_uses_defaults(tmp_path: Path) -> None:
    # YuniKorn accepts the file and uses the defaults; validate-conf says which and where.
    result = run_cli(str(write(tmp_path, PREEMPTION_WARNINGS)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("valid\n")
    assert result.stderr.splitlines() == [
        "warning: partition default, queue root.a: preemption.policy 'weird' is not default, fence or disabled: "
        "default is used",
        "warning: partition default, queue root.a: preemption.delay '-5s' is not a duration above zero: 30s is used",
        "warning: partition default, queue root.a: quota.preemption.delay 'soon' is not a duration above zero: "
        "0s (never) is used",
    ]


def test_preemption_delays_past_int64_and_hostile_lengths_are_only_warnings(tmp_path: Path) -> None:
    # Go's ParseDuration refuses a duration past int64 nanoseconds; so does the scheduler, which
    # then keeps the default. A 100 KB digit string is refused the same way, at once.
    text = PREEMPTION_WARNINGS.replace('preemption.delay: 10s', 'preemption.delay: 2562048h').replace(
        'quota.preemption.delay: 1m', 'quota.preemption.delay: "' + "9" * 100_000 + 'h"')
    result = run_cli(str(write(tmp_path, text)))
    assert result.returncode == 0, result.stderr[:500]
    lines = [line for line in result.stderr.splitlines() if "root.b" in line]
    assert len(lines) == 2
    assert lines[0] == ("warning: partition default, queue root.b: preemption.delay '2562048h' is not a duration "
                        "above zero: 30s is used")
    assert lines[1].endswith("... (100,001 characters) is not a duration above zero: 0s (never) is used")
    assert len(lines[1]) < 300
