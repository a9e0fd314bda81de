"""The Helm chart's tests' own data (tests/test_helm_chart.py, tests/test_helm_install.py): where
the chart and the manifests it mirrors are, the release the tests make, the values they set, and
the chart rendered as objects. helm itself is run through tests/helm_kit.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from helm_kit import Helm

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "k8s" / "chart"
DEPLOY = ROOT / "k8s" / "deploy"
RELEASE = "pyscheduler"
RELEASE_NAMESPACE = "pyscheduler-system"
#: The schedulerName the tests' releases serve (not a default one: the value must reach the shim).
SCHEDULER_NAME = "helm-scheduler"
#: Every optional part of the chart on (lint, the rendered Deployment, the server-side dry run).
OPTIONS_ON = [
    "--set", "reporterAgent.enabled=true",
    "--set", "metrics.serviceMonitor.enabled=true",
    "--set", "metrics.podMonitor.enabled=true",
    "--set", "grafanaDashboard.enabled=true",
    "--set", "configMap.settings.service\\.schedulingInterval=1s",
    "--set", "extraArgs[0]=--health-interval=60",
    "--set", "extraArgs[1]=--role-history-dir=/var/lib/pyscheduler/history",
    "--set-json", 'extraVolumes=[{"name": "history", "emptyDir": {}}]',
    "--set-json", 'extraVolumeMounts=[{"name": "history", "mountPath": "/var/lib/pyscheduler/history"}]',
    "--set-json", 'extraEnv=[{"name": "GUNICORN_CMD_ARGS", "value": "--graceful-timeout 20"}]',
    "--set", "nodeSelector.kubernetes\\.io/os=linux",
    "--set", "tolerations[0].key=dedicated,tolerations[0].operator=Equal,tolerations[0].value=scheduler",
    "--set", "tolerations[0].effect=NoSchedule",
    "--set", "podSecurityContext.fsGroup=10001",
    "--set", "priorityClassName=system-cluster-critical",
]
#: The queues the tests install: root.alpha only; the upgrade adds root.beta.
QUEUES = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: alpha
"""
UPGRADED_QUEUES = QUEUES + "          - name: beta\n"


def documents(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML text (helm's output), empty documents left out."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render(helm: Helm, *args: str) -> list[dict[str, Any]]:
    """The chart rendered (``helm template``, release :data:`RELEASE` in :data:`RELEASE_NAMESPACE`)."""
    return documents(helm.run("template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE, *args).stdout)


def manifest(path: Path) -> list[dict[str, Any]]:
    """The objects of one of k8s/deploy/'s manifests."""
    return documents(path.read_text())
