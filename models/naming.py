"""Names, labels, annotations and constants shared with KubeRay (and raypilot's own additions).

Everything here is pure. Random names take the random source as an argument so that a workflow
can pass `workflow.random()` and stay deterministic on replay.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Mapping
from typing import Final, Literal, NamedTuple

__all__ = [
    "ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART",
    "ANNOTATION_EXTERNAL_STORAGE_NAMESPACE",
    "ANNOTATION_FT_ENABLED",
    "ANNOTATION_HASH",
    "ANNOTATION_INITIALIZING_TIMEOUT",
    "ANNOTATION_KUBERAY_VERSION",
    "ANNOTATION_NUM_WORKER_GROUPS",
    "ANNOTATION_RAYJOB_UID",
    "ANNOTATION_WORKFLOW_ID",
    "CLUSTER_SELECTOR_KEY",
    "CREATED_BY_RAYPILOT",
    "DEFAULT_CLIENT_PORT",
    "DEFAULT_DASHBOARD_PORT",
    "DEFAULT_GCS_SERVER_PORT",
    "DEFAULT_METRICS_PORT",
    "DEFAULT_SERVE_PORT",
    "DEFAULT_SUBMITTER_BACKOFF_LIMIT",
    "DNS1035_LABEL_MAX_LENGTH",
    "GATEWAY_LISTENER_NAME",
    "GATEWAY_LISTENER_PORT",
    "GATEWAY_LISTENER_PROTOCOL",
    "HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS",
    "HTTP_CLIENT_PROXY_TIMEOUT_SECONDS",
    "KIND_RAYCLUSTER",
    "KIND_RAYJOB",
    "KIND_RAYSERVICE",
    "KUBERAY_VERSION",
    "LABEL_CLUSTER",
    "LABEL_CREATED_BY",
    "LABEL_IDENTIFIER",
    "LABEL_JOB_SUBMISSION_MODE",
    "LABEL_NODE_TYPE",
    "LABEL_ORIGINATED_FROM_CRD",
    "LABEL_ORIGINATED_FROM_CR_NAME",
    "LABEL_SERVE",
    "LABEL_VALUE_MAX_LENGTH",
    "MANAGED_BY_KUBERAY",
    "MANAGED_BY_MULTIKUEUE",
    "MAX_RAYCLUSTER_NAME_LENGTH",
    "MAX_RAYJOB_NAME_LENGTH",
    "MAX_RAYSERVICE_NAME_LENGTH",
    "MEMO_GENERATION",
    "MEMO_INHERITED_FROM",
    "MEMO_OUTCOME",
    "MEMO_SPEC_HASH",
    "RAYCLUSTER_DELETION_DELAY_SECONDS",
    "RAY_CONTAINER_INDEX",
    "SUBMITTER_CONTAINER_NAME",
    "SUBMITTER_FINISHED_TIMEOUT_SECONDS",
    "SUFFIX_ALPHABET",
    "SUFFIX_LENGTH",
    "WORKFLOW_KINDS",
    "ObjectRef",
    "RayKind",
    "canonical_kind",
    "gateway_name",
    "generated_cluster_name",
    "generated_job_id",
    "head_identifier",
    "head_service_name",
    "http_route_name",
    "is_owned_by_this_rayjob",
    "ownership_label_selector",
    "ownership_labels",
    "parse_object_ref",
    "random_suffix",
    "serve_service_label",
    "serve_service_name",
    "submitter_job_name",
    "trim_label_value",
    "upgrade_outcome_workflow_id",
    "workflow_annotations",
    "workflow_id",
]

# ---- kinds ----------------------------------------------------------------------------------------

RayKind = Literal["RayJob", "RayService"]
KIND_RAYJOB: Final = "RayJob"
KIND_RAYSERVICE: Final = "RayService"
KIND_RAYCLUSTER: Final = "RayCluster"
WORKFLOW_KINDS: Final[tuple[RayKind, ...]] = (KIND_RAYJOB, KIND_RAYSERVICE)

# ---- label and annotation keys (KubeRay's, unless marked raypilot) ------------------------------

LABEL_ORIGINATED_FROM_CR_NAME: Final = "ray.io/originated-from-cr-name"
LABEL_ORIGINATED_FROM_CRD: Final = "ray.io/originated-from-crd"
LABEL_CLUSTER: Final = "ray.io/cluster"
LABEL_NODE_TYPE: Final = "ray.io/node-type"
LABEL_IDENTIFIER: Final = "ray.io/identifier"
LABEL_SERVE: Final = "ray.io/serve"
LABEL_JOB_SUBMISSION_MODE: Final = "ray.io/job-submission-mode"
LABEL_CREATED_BY: Final = "app.kubernetes.io/created-by"
CREATED_BY_RAYPILOT: Final = "raypilot"  # KubeRay writes "kuberay-operator"; the contract says raypilot.

ANNOTATION_HASH: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
ANNOTATION_NUM_WORKER_GROUPS: Final = "ray.io/num-worker-groups"
ANNOTATION_KUBERAY_VERSION: Final = "ray.io/kuberay-version"
ANNOTATION_INITIALIZING_TIMEOUT: Final = "ray.io/initializing-timeout"
ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART: Final = "ray.io/disable-provisioned-head-restart"
ANNOTATION_FT_ENABLED: Final = "ray.io/ft-enabled"
ANNOTATION_EXTERNAL_STORAGE_NAMESPACE: Final = "ray.io/external-storage-namespace"
ANNOTATION_WORKFLOW_ID: Final = "raypilot.io/workflow-id"  # raypilot
# raypilot: which run of a RayJob's workflow created the object (its first execution run id).
ANNOTATION_RAYJOB_UID: Final = "raypilot.io/rayjob-uid"
# raypilot: memo keys a completed RayJob run leaves (workflows.decisions.rayjob.object).
MEMO_OUTCOME: Final = "raypilot.io/outcome"
MEMO_GENERATION: Final = "raypilot.io/generation"
MEMO_SPEC_HASH: Final = "raypilot.io/spec-hash"
MEMO_INHERITED_FROM: Final = "raypilot.io/inherited-from"

CLUSTER_SELECTOR_KEY: Final = "ray.io/cluster"  # RayJob spec.clusterSelector key naming the RayCluster

# The value KubeRay writes into ray.io/kuberay-version; a different value on an existing RayCluster
# makes the RayService update it in place.
KUBERAY_VERSION: Final = "nightly"

MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"

# ---- name limits ----------------------------------------------------------------------------------

MAX_RAYCLUSTER_NAME_LENGTH: Final = 53
# Room for the "-<5 random chars>" suffix of the RayCluster a RayJob/RayService creates.
MAX_RAYSERVICE_NAME_LENGTH: Final = MAX_RAYCLUSTER_NAME_LENGTH - 6
MAX_RAYJOB_NAME_LENGTH: Final = MAX_RAYCLUSTER_NAME_LENGTH - 6
DNS1035_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63

# ---- ports and container names --------------------------------------------------------------------

DEFAULT_CLIENT_PORT: Final = 10001
DEFAULT_GCS_SERVER_PORT: Final = 6379
DEFAULT_DASHBOARD_PORT: Final = 8265
DEFAULT_METRICS_PORT: Final = 8080
DEFAULT_SERVE_PORT: Final = 8000
GATEWAY_LISTENER_NAME: Final = "http"
GATEWAY_LISTENER_PORT: Final = 80
GATEWAY_LISTENER_PROTOCOL: Final = "HTTP"
RAY_CONTAINER_INDEX: Final = 0
SUBMITTER_CONTAINER_NAME: Final = "ray-job-submitter"

# ---- delays and timeouts (seconds) ----------------------------------------------------------------

RAYCLUSTER_DELETION_DELAY_SECONDS: Final = 60
SUBMITTER_FINISHED_TIMEOUT_SECONDS: Final = 30
HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS: Final = 2
HTTP_CLIENT_PROXY_TIMEOUT_SECONDS: Final = 10
DEFAULT_SUBMITTER_BACKOFF_LIMIT: Final = 2

# ---- random names ---------------------------------------------------------------------------------

# Kubernetes apimachinery's rand.String alphabet: no vowels (no accidental words), no 0/1/3 (no
# look-alikes).
SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX_LENGTH: Final = 5


def random_suffix(rand: random.Random, length: int = SUFFIX_LENGTH) -> str:
    """`length` characters of KubeRay's suffix alphabet drawn from `rand`."""
    if length < 0:
        raise ValueError(f"suffix length must be non-negative, got {length}")
    return "".join(rand.choice(SUFFIX_ALPHABET) for _ in range(length))


def generated_cluster_name(owner_name: str, rand: random.Random) -> str:
    """Name of a RayCluster created for a RayJob or RayService: "<owner>-<5 random chars>"."""
    return f"{owner_name}-{random_suffix(rand)}"


def generated_job_id(rayjob_name: str, rand: random.Random) -> str:
    """Submission id of a RayJob without spec.jobId: "<rayjob>-<5 random chars>"."""
    return f"{rayjob_name}-{random_suffix(rand)}"


# ---- object names ---------------------------------------------------------------------------------


def head_service_name(owner_name: str) -> str:
    return f"{owner_name}-head-svc"


def serve_service_name(owner_name: str) -> str:
    """RayService-level serve Service (`<rs>`) or per-cluster one (`<raycluster>`)."""
    return f"{owner_name}-serve-svc"


def serve_service_label(rayservice_name: str) -> str:
    """Value of ray.io/serve on the RayService-level serve Service."""
    return f"{rayservice_name}-serve"


def gateway_name(rayservice_name: str) -> str:
    return f"{rayservice_name}-gateway"


def http_route_name(rayservice_name: str) -> str:
    return f"{rayservice_name}-httproute"


def submitter_job_name(rayjob_name: str) -> str:
    """The K8sJobMode submitter batch/v1 Job shares the RayJob's name."""
    return rayjob_name


def trim_label_value(value: str) -> str:
    """KubeRay's CheckLabel: keep the last 63 characters; a leading punctuation becomes "r"."""
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        value = value[len(value) - LABEL_VALUE_MAX_LENGTH :]
    if value and unicodedata.category(value[0]).startswith("P"):
        value = "r" + value[1:]
    return value


def head_identifier(owner_name: str) -> str:
    """Value of ray.io/identifier for head objects: "<name>-head", trimmed to a label value."""
    return trim_label_value(f"{owner_name}-head")


# ---- workflow ids and object references ----------------------------------------------------------


class ObjectRef(NamedTuple):
    """A RayJob or RayService by kind, namespace and name."""

    kind: RayKind
    namespace: str
    name: str


_KIND_BY_LOWER: dict[str, RayKind] = {kind.lower(): kind for kind in WORKFLOW_KINDS}
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def canonical_kind(kind: str) -> RayKind:
    """ "rayjob", "RayJob", "RAYJOB" -> "RayJob" (likewise RayService); anything else: ValueError."""
    try:
        return _KIND_BY_LOWER[kind.lower()]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}: expected rayjob or rayservice") from None


def workflow_id(kind: str, namespace: str, name: str) -> str:
    """The contract's workflow id: "rayjob/<namespace>/<name>" or "rayservice/<namespace>/<name>"."""
    return f"{canonical_kind(kind).lower()}/{namespace}/{name}"


def upgrade_outcome_workflow_id(namespace: str, name: str, generation: int) -> str:
    """The id of the workflow that waits for the outcome of one generation of a RayService (the Nexus
    operation `upgrade_rayservice`, docs/contract.md §9):
    "rayservice-upgrade/<namespace>/<name>/<generation>". One generation has one outcome, so every request
    for it shares one waiting workflow."""
    return f"rayservice-upgrade/{namespace}/{name}/{generation}"


def parse_object_ref(text: str) -> ObjectRef:
    """Inverse of `workflow_id` (kind case-insensitive): "rayjob/NS/NAME" -> ObjectRef("RayJob", NS, NAME).

    ValueError when the text is not KIND/NAMESPACE/NAME with a known kind, a DNS-1123 label as
    namespace and a DNS-1123 subdomain as name.
    """
    parts = text.split("/")
    if len(parts) != 3:
        raise ValueError(f"expected KIND/NAMESPACE/NAME (e.g. rayjob/default/sample), got {text!r}")
    raw_kind, namespace, name = parts
    kind = canonical_kind(raw_kind)
    if len(namespace) > 63 or not _DNS1123_LABEL.fullmatch(namespace):
        raise ValueError(f"invalid namespace {namespace!r} in {text!r}: must be a DNS-1123 label")
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        raise ValueError(f"invalid name {name!r} in {text!r}: must be a lower-case DNS-1123 name")
    return ObjectRef(kind, namespace, name)


# ---- ownership labels (contract section 5) --------------------------------------------------------


def ownership_labels(kind: str, name: str) -> dict[str, str]:
    """Labels every object created for the RayJob/RayService `name` carries."""
    return {
        LABEL_ORIGINATED_FROM_CR_NAME: name,
        LABEL_ORIGINATED_FROM_CRD: canonical_kind(kind),
        LABEL_CREATED_BY: CREATED_BY_RAYPILOT,
    }


def ownership_label_selector(kind: str, name: str) -> str:
    """Selector of the objects owned by a RayJob/RayService, as KubeRay selects them.

    It leaves out created-by so that objects KubeRay created before a migration are found too.
    """
    return f"{LABEL_ORIGINATED_FROM_CR_NAME}={name},{LABEL_ORIGINATED_FROM_CRD}={canonical_kind(kind)}"


def workflow_annotations(workflow_id: str) -> dict[str, str]:
    """Annotations every object created by a workflow carries."""
    return {ANNOTATION_WORKFLOW_ID: workflow_id}


def is_owned_by_this_rayjob(annotations: Mapping[str, str] | None, rayjob_uid: str) -> bool:
    """Whether an existing object of the name a RayJob's run wants to create is that run's own (its create
    was retried), rather than the leftover of an earlier run of the same RayJob (a different or missing
    `raypilot.io/rayjob-uid`), which must never be adopted."""
    return bool(rayjob_uid) and (annotations or {}).get(ANNOTATION_RAYJOB_UID) == rayjob_uid
