"""The core's configuration from ConfigMaps: registering the shim with it, and reloading it.

The queues come from the ConfigMap ``pyscheduler-configs`` (else ``yunikorn-configs``: a
YuniKorn user changes nothing) in the shim's namespace: key ``queues.yaml``, every other key a
setting; without one, the configuration the shim was given. The ConfigMaps are watched: an edit
reloads the core (a ``ConfigurationApplied`` event on the ConfigMap), an invalid one is refused
by the core with the running configuration kept and an ``InvalidConfiguration`` warning event on
the ConfigMap. A ConfigMap deleted leaves the running configuration as it is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final

from pyscheduler.common.errors import ConfigError
from pyscheduler.si.api import SchedulerAPI
from pyscheduler.si import messages as si
from pyscheduler.si.callback import ResourceManagerCallback
from pyscheduler_k8s.counts import ShimCounts
from pyscheduler_k8s.event_recorder import EventRecorder
from pyscheduler_k8s.kubeapi import KubeApi

__all__ = ["CONFIG_MAP_NAMES", "Configuration", "DEFAULT_EXTRA_CONFIG", "QUEUES_KEY"]

log = logging.getLogger(__name__)

#: Settings the shim registers with: the core's request events on (off for other RMs by
#: default), so its event stream and REST API say why each pod's ask waits (the pod itself hears
#: it typed, through ``update_container_scheduling_state``).
DEFAULT_EXTRA_CONFIG: Final = {"service.event.requestEventsEnabled": "true"}
#: The ConfigMaps holding the configuration, the first one found wins.
CONFIG_MAP_NAMES: Final = ("pyscheduler-configs", "yunikorn-configs")
QUEUES_KEY: Final = "queues.yaml"


@dataclass(frozen=True)
class _ConfigSource:
    """The configuration a ConfigMap holds, and the ConfigMap (for its events)."""

    #: (queues.yaml, every other key as a setting)
    content: tuple[str, dict[str, str]]
    reference: dict[str, str]


class Configuration:
    def __init__(self, api: KubeApi, proxy: SchedulerAPI, recorder: EventRecorder, counts: ShimCounts, *, rm_id: str,
                 namespace: str, config_text: str) -> None:
        self._api = api
        self._proxy = proxy
        self._recorder = recorder
        self._counts = counts
        self._rm_id = rm_id
        self._namespace = namespace
        self._config_text = config_text
        #: The ConfigMap's queues.yaml and settings last applied (None: the given one).
        self._applied: tuple[str, dict[str, str]] | None = None

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self._namespace}/configmaps"

    def register(self, callback: ResourceManagerCallback) -> str:
        """Registers the shim with the core under the configuration found; the ConfigMaps'
        version to watch from. Raises :class:`ConfigError` when the ConfigMap's configuration is
        invalid (said on the ConfigMap as an ``InvalidConfiguration`` event)."""
        maps, version = self._api.list(self.path)
        found = self._configuration_of(maps)
        config, extra = found.content if found is not None else (self._config_text, {})
        try:
            self._proxy.register_resource_manager(si.RegisterResourceManagerRequest(
                rm_id=self._rm_id, policy_group="queues", config=config,
                extra_config={**DEFAULT_EXTRA_CONFIG, **extra}), callback)
        except ConfigError as exc:
            if found is None:
                raise
            self._counts.config_rejected += 1
            self._recorder.write_event(found.reference, "Warning", "InvalidConfiguration",
                                       f"configuration refused, nothing is scheduled until it is fixed: {exc}")
            raise ConfigError(f"ConfigMap {self._namespace}/{found.reference['name']}: {exc}") from exc
        self._applied = found.content if found is not None else None
        return version

    def _configuration_of(self, maps: list[dict[str, Any]]) -> _ConfigSource | None:
        """The first ConfigMap of :data:`CONFIG_MAP_NAMES` present: its queues.yaml and settings."""
        by_name = {str((m.get("metadata") or {}).get("name", "")): m for m in maps}
        for name in CONFIG_MAP_NAMES:
            found = by_name.get(name)
            if found is not None:
                data = {str(k): str(v) for k, v in (found.get("data") or {}).items()}
                reference = {"kind": "ConfigMap", "namespace": self._namespace, "name": name,
                             "uid": str((found.get("metadata") or {}).get("uid", "")), "apiVersion": "v1"}
                return _ConfigSource((data.pop(QUEUES_KEY, ""), data), reference)
        return None

    def relist(self) -> str:
        maps, version = self._api.list(self.path)
        self._apply(maps)
        return version

    def on_config_map(self, kind: str, config_map: dict[str, Any]) -> None:
        if str((config_map.get("metadata") or {}).get("name", "")) in CONFIG_MAP_NAMES:
            self.relist()  # which one wins depends on the others: read them all

    def _apply(self, maps: list[dict[str, Any]]) -> None:
        """Reloads the core with the winning ConfigMap when it changed (see the module doc)."""
        found = self._configuration_of(maps)
        if found is None or found.content == self._applied:
            return
        (config, extra), reference = found.content, found.reference
        try:
            self._proxy.update_configuration(si.UpdateConfigurationRequest(
                rm_id=self._rm_id, policy_group="queues", config=config,
                extra_config={**DEFAULT_EXTRA_CONFIG, **extra}))
        except ConfigError as exc:
            self._counts.config_rejected += 1
            self._applied = found.content  # said once; the next edit is tried again
            log.warning("configuration in ConfigMap %s refused: %s", reference["name"], exc)
            self._recorder.write_event(reference, "Warning", "InvalidConfiguration",
                                       f"configuration refused, the running one stays: {exc}")
            return
        self._applied = found.content
        self._counts.config_reloads += 1
        self._recorder.write_event(reference, "Normal", "ConfigurationApplied", "queues.yaml and settings applied")
