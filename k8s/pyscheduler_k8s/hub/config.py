"""The clusters file of a hub (``pyscheduler serve --clusters-file FILE``, or
``PYSCHEDULER_K8S_CLUSTERS_FILE``): which cluster is the hub, which are its members, and what
happens to a member that stops answering.

```yaml
hub: {name: hub, kubeconfig: /etc/pyscheduler/hub.kubeconfig}
members:
  - {name: east, kubeconfig: /etc/pyscheduler/east.kubeconfig, labels: {region: eu}}
  - {name: west, kubeconfig: /etc/pyscheduler/west.kubeconfig}
lostAfter: 300      # seconds a member may be unreachable before its pods are requeued (default 300)
onLost: requeue     # requeue (placed again in another member) or fail (the hub pods fail)
probeInterval: 2    # seconds between two looks at each member (default 2)
```

Names are DNS labels, each once (the hub's is its RM id: its partition is ``[hub]default``);
kubeconfigs must exist; labels are strings (a label key and value as Kubernetes spells them).
:func:`load_hub_config` raises ValueError naming the first thing wrong; nothing is started from
a file that does not parse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from pyscheduler_k8s.clusters import NamedCluster, parse_cluster

__all__ = ["CLUSTERS_FILE_ENV", "HubConfig", "MemberConfig", "hub_config_from_environment", "load_hub_config",
           "parse_hub_config"]

CLUSTERS_FILE_ENV: Final = "PYSCHEDULER_K8S_CLUSTERS_FILE"
ON_LOST: Final = ("requeue", "fail")
_LABEL_KEY: Final = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE: Final = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_MAX_MEMBERS: Final = 64


@dataclass(frozen=True)
class MemberConfig:
    cluster: NamedCluster
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.cluster.name


@dataclass(frozen=True)
class HubConfig:
    hub: NamedCluster
    members: tuple[MemberConfig, ...]
    lost_after: float = 300.0
    on_lost: str = "requeue"
    probe_interval: float = 2.0


def _cluster(entry: Any, where: str) -> NamedCluster:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with name and kubeconfig")
    unknown = set(entry) - {"name", "kubeconfig", "labels"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    name, path = entry.get("name"), entry.get("kubeconfig")
    if not isinstance(name, str) or not isinstance(path, str):
        raise ValueError(f"{where}: name and kubeconfig must be strings")
    try:
        return parse_cluster(f"{name}={path}")
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _labels(entry: Mapping[str, Any], where: str) -> dict[str, str]:
    labels = entry.get("labels") or {}
    if not isinstance(labels, dict):
        raise ValueError(f"{where}: labels must be a mapping")
    out: dict[str, str] = {}
    for key, value in labels.items():
        value = str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
        if not isinstance(key, str) or not _LABEL_KEY.fullmatch(key) or len(key) > 316:
            raise ValueError(f"{where}: label key {key!r} is not a Kubernetes label key")
        if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
            raise ValueError(f"{where}: label {key}: value {value!r} is not a Kubernetes label value")
        out[key] = value
    return out


def _seconds(document: Mapping[str, Any], key: str, default: float, minimum: float) -> float:
    value = document.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= 86400 * 7:
        raise ValueError(f"{key}: expected seconds between {minimum:g} and {86400 * 7}, got {value!r}")
    return float(value)


def parse_hub_config(document: Any) -> HubConfig:
    """The file's YAML document as a :class:`HubConfig` (ValueError naming what is wrong)."""
    if not isinstance(document, dict):
        raise ValueError("expected a mapping with hub and members")
    unknown = set(document) - {"hub", "members", "lostAfter", "onLost", "probeInterval"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(map(str, unknown)))}")
    hub = _cluster(document.get("hub"), "hub")
    members_doc = document.get("members")
    if not isinstance(members_doc, list) or not members_doc:
        raise ValueError("members: expected a list of at least one member")
    if len(members_doc) > _MAX_MEMBERS:
        raise ValueError(f"members: at most {_MAX_MEMBERS}")
    members = tuple(MemberConfig(_cluster(m, f"members[{i}]"), _labels(m, f"members[{i}]"))
                    for i, m in enumerate(members_doc))
    names = [hub.name, *(m.name for m in members)]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"cluster {name!r} is named twice")
    on_lost = document.get("onLost", "requeue")
    if on_lost not in ON_LOST:
        raise ValueError(f"onLost: expected one of {', '.join(ON_LOST)}, got {on_lost!r}")
    probe = _seconds(document, "probeInterval", 2.0, 0.1)
    return HubConfig(hub, members, lost_after=_seconds(document, "lostAfter", 300.0, 1.0), on_lost=on_lost,
                     probe_interval=probe)


def load_hub_config(path: str) -> HubConfig:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            text = handle.read(1 << 20)
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not YAML: {exc}") from None
    try:
        return parse_hub_config(document)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def hub_config_from_environment() -> HubConfig | None:
    path = os.environ.get(CLUSTERS_FILE_ENV, "").strip()
    return load_hub_config(path) if path else None
