"""A reporter plugin process for the tests, speaking Katalyst's gRPC API on a unix socket the
way a plugin written for Katalyst's agent does: kubelet's Registration service and the
ReporterPlugin service on the same socket.

    python reporter_plugin_server.py SOCKET NAME CONTENT_FILE STATUS_FILE [--type T] [--version V]

Each call reads CONTENT_FILE (JSON: [{"kind": ..., "group": ..., "version": ..., "fields":
[{"type": 2, "name": "Labels", "value": {...}}]}]); the watch stream sends it at once and again
whenever the file changes. The registration outcome the manager reports is written to
STATUS_FILE as JSON ({"registered": bool, "error": str}).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

from pyscheduler.reporter.grpc_api import k8s_meta_pb2, pluginregistration_pb2, pluginregistration_pb2_grpc
from pyscheduler.reporter.grpc_api import reporter_pb2, reporter_pb2_grpc


def response(content_file: Path) -> Any:
    contents = json.loads(content_file.read_text())
    return reporter_pb2.GetReportContentResponse(content=[
        reporter_pb2.ReportContent(
            groupVersionKind=k8s_meta_pb2.GroupVersionKind(group=c.get("group", ""), version=c["version"], kind=c["kind"]),
            field=[reporter_pb2.ReportField(fieldType=f["type"], fieldName=f["name"],
                                            value=json.dumps(f["value"]).encode()) for f in c["fields"]],
        )
        for c in contents
    ])


class Reporter(reporter_pb2_grpc.ReporterPluginServicer):
    def __init__(self, content_file: Path) -> None:
        self.content_file = content_file

    def GetReportContent(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC's names)
        return response(self.content_file)

    def ListAndWatchReportContent(self, request: Any, context: Any) -> Any:  # noqa: N802
        last = -1
        while context.is_active():
            mtime = self.content_file.stat().st_mtime_ns
            if mtime != last:
                last = mtime
                yield response(self.content_file)
            time.sleep(0.05)


class Registration(pluginregistration_pb2_grpc.RegistrationServicer):
    def __init__(self, name: str, plugin_type: str, version: str, status_file: Path) -> None:
        self.name, self.plugin_type, self.version, self.status_file = name, plugin_type, version, status_file

    def GetInfo(self, request: Any, context: Any) -> Any:  # noqa: N802
        return pluginregistration_pb2.PluginInfo(type=self.plugin_type, name=self.name, endpoint="",
                                                 supported_versions=[self.version])

    def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.status_file.write_text(json.dumps({"registered": request.plugin_registered, "error": request.error}))
        return pluginregistration_pb2.RegistrationStatusResponse()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("name")
    parser.add_argument("content_file", type=Path)
    parser.add_argument("status_file", type=Path)
    parser.add_argument("--type", default="ReporterPlugin")
    parser.add_argument("--version", default="v1alpha1")
    args = parser.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    reporter_pb2_grpc.add_ReporterPluginServicer_to_server(Reporter(args.content_file), server)
    pluginregistration_pb2_grpc.add_RegistrationServicer_to_server(
        Registration(args.name, args.type, args.version, args.status_file), server)
    os.makedirs(os.path.dirname(args.socket), exist_ok=True)
    server.add_insecure_port(f"unix://{args.socket}")
    server.start()
    print("serving", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
