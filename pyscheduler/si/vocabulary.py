"""The SI's vocabulary: the names of node attributes, allocation attributes and tags, and
application tags, shared by the core and every RM (YuniKorn's ``lib/go/common/constants.go``,
plus pyscheduler's own ``pyscheduler.io/`` tags). One definition each: the core and the shims
import these, never repeat the strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# -- constants (SI lib/go/common/constants.go) ---------------------------------------------------

# Node attributes. NODE_PARTITION selects the partition (empty or missing: "default");
# INSTANCE_TYPE keys the resource-history buckets (missing: "UNKNOWN").
ARCH: Final = "si/arch"
HOST_NAME: Final = "si/hostname"
RACK_NAME: Final = "si/rackname"
OS: Final = "si/os"
INSTANCE_TYPE: Final = "si/instance-type"
FAILURE_DOMAIN_ZONE: Final = "si/zone"
FAILURE_DOMAIN_REGION: Final = "si/region"
LOCAL_IMAGES: Final = "si/local-images"
NODE_PARTITION: Final = "si/node-partition"

# Allocation attributes.
APPLICATION_ID: Final = "si/application-id"
CONTAINER_IMAGE: Final = "si/container-image"
CONTAINER_PORTS: Final = "si/container-ports"

# Allocation tags: keys are "<domain>[<group>]<key>", e.g. "kubernetes.io/meta/namespace".
DOMAIN_K8S: Final = "kubernetes.io/"
DOMAIN_YUNIKORN: Final = "yunikorn.apache.org/"
GROUP_META: Final = "meta/"
GROUP_LABEL: Final = "label/"
GROUP_ANNOTATION: Final = "annotation/"
KEY_POD_NAME: Final = "podName"
KEY_NAMESPACE: Final = "namespace"
KEY_REQUIRED_NODE: Final = "requiredNode"
# The core reads the required node from the domain-qualified key (GetRequiredNodeFromTag).
TAG_REQUIRED_NODE: Final = DOMAIN_YUNIKORN + KEY_REQUIRED_NODE
# Unix seconds at which the ask was created; sets the ask's createTime (else: now). The tag is
# used bare on allocations; YuniKorn reads DOMAIN_YUNIKORN + CREATION_TIME on application tags.
CREATION_TIME: Final = "creationTime"
#: The application tag with the Unix seconds the application was created at: the placeholder
#: timeout counts from then (a gang an RM resumes after a restart keeps its deadline).
APP_CREATION_TIME_TAG: Final = DOMAIN_YUNIKORN + CREATION_TIME
# Marks an allocation of a pod the RM placed without YuniKorn (it occupies node resources but
# belongs to no application). "static" ones (e.g. K8s static pods) can never be preempted.
FOREIGN: Final = "foreign"
ALLOC_TYPE_DEFAULT: Final = "default"
ALLOC_TYPE_STATIC: Final = "static"

# "true" on an ask: the RM ranks the nodes it may go on (its preferred terms: Kubernetes'
# preferred affinity, ScheduleAnyway spreading), through the optional ``score_nodes`` callback.
TAG_SCORE_NODES: Final = "pyscheduler.io/score-nodes"

# Application tags and miscellaneous values shared by core and shim.
APP_TAG_NAMESPACE_RESOURCE_QUOTA: Final = "namespace.resourcequota"
APP_TAG_NAMESPACE_RESOURCE_GUARANTEED: Final = "namespace.resourceguaranteed"
APP_TAG_STATE_AWARE_DISABLE: Final = "application.stateaware.disable"
# "true" (only that exact value) places an app that no rule places in the recovery queue.
APP_TAG_CREATE_FORCE: Final = "application.create.force"
# Retired by the core (readiness is the shim's business); kept so old RMs' attributes parse.
NODE_READY_ATTRIBUTE: Final = "ready"

# Role history (docs/role-history.md): the ask's role within its application, and the key its
# history is kept under (default: the application ID). The Kubernetes shim sets both from labels.
ROLE_TAG: Final = "pyscheduler.io/role"
HISTORY_KEY_TAG: Final = "pyscheduler.io/role-history-key"

# Member clusters (issue 33 level 2, docs/multicluster.md): a hub RM registers one partition
# whose nodes come from several member clusters. Node attributes: the node's member cluster,
# and that cluster's labels as "key=value,key=value" (the same on all its nodes; absent: none).
CLUSTER_ATTRIBUTE: Final = "pyscheduler.io/cluster"
CLUSTER_LABELS_ATTRIBUTE: Final = "pyscheduler.io/cluster-labels"
# Application tags choosing the member cluster an application is placed in, whole:
# required: only these clusters ("east,west"; one name pins), or the clusters whose labels match
# every pair ("region=eu,tier=gold"); preferred: these clusters first, in order ("west,east"),
# or the clusters whose labels match ("region=eu"). A malformed value rejects the application.
APP_TAG_CLUSTERS: Final = "pyscheduler.io/clusters"
APP_TAG_CLUSTER_SELECTOR: Final = "pyscheduler.io/cluster-selector"
APP_TAG_PREFERRED_CLUSTERS: Final = "pyscheduler.io/preferred-clusters"
APP_TAG_PREFERRED_CLUSTER_SELECTOR: Final = "pyscheduler.io/preferred-cluster-selector"

# Topology-aware gangs (issue 34, docs/topology.md): a partition names its topology levels by node
# label (its configuration's `topology.levels`); an application asks for one level's domain,
# required (all its allocations in one domain of that level) or preferred (one domain when one
# has room, else anywhere). The value is the level's node label, as Kueue's podset annotations.
APP_TAG_TOPOLOGY_REQUIRED: Final = "pyscheduler.io/topology-required"
APP_TAG_TOPOLOGY_PREFERRED: Final = "pyscheduler.io/topology-preferred"
# Slices: the application's members in groups of `slice-size` (in the order they were asked for),
# each group in one domain of the `slice-required` level (Kueue's podset slices).
APP_TAG_TOPOLOGY_SLICE_REQUIRED: Final = "pyscheduler.io/topology-slice-required"
APP_TAG_TOPOLOGY_SLICE_SIZE: Final = "pyscheduler.io/topology-slice-size"


# -- tag helpers -----------------------------------------------------------------------------------


def required_node(tags: Mapping[str, str]) -> str:
    """The node an allocation must run on (:data:`TAG_REQUIRED_NODE`), or ``""`` if none."""
    return tags.get(TAG_REQUIRED_NODE, "")


def foreign_type(tags: Mapping[str, str]) -> str:
    """The :data:`FOREIGN` tag's value (``"default"`` / ``"static"``), or ``""`` for a YuniKorn allocation."""
    return tags.get(FOREIGN, "")


def is_app_creation_forced(tags: Mapping[str, str]) -> bool:
    """True when an application's tags force its creation (:data:`APP_TAG_CREATE_FORCE` is ``"true"``).

    Any other value, including ``"True"`` or garbage, is not forced, as in YuniKorn.
    """
    return tags.get(APP_TAG_CREATE_FORCE, "") == "true"
