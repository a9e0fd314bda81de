"""The committed gRPC code (pyscheduler/reporter/grpc_api) is what ``make proto`` generates from
protos/, and its services have Katalyst's and kubelet's wire names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "pyscheduler" / "reporter" / "grpc_api"


def test_the_generated_code_is_up_to_date(tmp_path: Path) -> None:
    protos = sorted((ROOT / "protos" / "pyscheduler" / "reporter" / "grpc_api").glob("*.proto"))
    done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", str(ROOT / "protos"),
                           f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}", *map(str, protos)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    fresh = tmp_path / "pyscheduler" / "reporter" / "grpc_api"
    names = sorted(p.name for p in fresh.glob("*.py"))
    assert names == sorted(p.name for p in GENERATED.glob("*_pb2*.py"))
    for name in names:
        assert (fresh / name).read_text() == (GENERATED / name).read_text(), f"{name} is stale: run make proto"


def test_wire_names_match_katalyst_and_kubelet() -> None:
    from pyscheduler.reporter.grpc_api import pluginregistration_pb2, reporter_pb2

    assert reporter_pb2.DESCRIPTOR.services_by_name["ReporterPlugin"].full_name == "reporterplugin.v1alpha1.ReporterPlugin"
    assert pluginregistration_pb2.DESCRIPTOR.services_by_name["Registration"].full_name == "pluginregistration.Registration"
    gvk = reporter_pb2.ReportContent.DESCRIPTOR.fields_by_name["groupVersionKind"].message_type
    assert gvk.full_name == "k8s.io.apimachinery.pkg.apis.meta.v1.GroupVersionKind"
