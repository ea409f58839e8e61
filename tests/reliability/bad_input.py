"""S5's bad inputs: every KubeRay validation rule of the RayJob and RayService tables
(tests/models/validation), each with KubeRay's message, and input that does not even parse, each with the
words a clear message must contain."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from models.features import FeatureGates
from tests.models.validation import test_raycluster as raycluster_rules
from tests.models.validation import test_rayjob as rayjob_rules
from tests.models.validation import test_rayservice as rayservice_rules

MIB = 1 << 20
# The names of the rule tables' base manifests (a case with another name is about the name).
BASE_NAMES = frozenset({rayjob_rules.base()["metadata"]["name"], rayservice_rules.base()["metadata"]["name"]})


@dataclass(frozen=True)
class BadInput:
    name: str
    kind: str  # the workflow it is sent to: RayJob or RayService
    text: str  # what the user's file holds
    message: str  # KubeRay's message (exact), or words the message must contain when `exact` is False
    exact: bool = True
    # Words `raypilot apply` must say instead, where it differs from the workflows: like `kubectl apply`, it
    # sends kinds that are not raypilot's to Kubernetes (here with no Kubernetes configuration to send them).
    cli_message: str | None = None
    # The operator's feature gates the case is judged under (None: the defaults).
    gates: FeatureGates | None = None

    @property
    def document(self) -> Any:
        """The JSON value the temporal CLI and the `apply` update carry (None: not JSON at all)."""
        try:
            return json.loads(self.text)
        except (ValueError, RecursionError):
            return None


def rule_violations() -> list[BadInput]:
    """One manifest per rule case that KubeRay rejects, with KubeRay's message."""
    cases = [
        ("RayJob", rayjob_rules.base, rayjob_rules.patched, rayjob_rules.CASES),
        ("RayService", rayservice_rules.base, rayservice_rules.patched, rayservice_rules.CASES),
    ]
    return [
        BadInput(f"{kind}: {name}", kind, json.dumps(patched(base(), changes)), expected)
        for kind, base, patched, table in cases
        for name, changes, expected in table
        if expected is not None
    ]


# KubeRay's ValidateRayServiceSpec refuses K8s token auth before it validates the RayCluster spec.
RAYSERVICE_TOKEN_AUTH = (
    "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService"
)


def gates_env(gates: FeatureGates) -> str:
    """RAYPILOT_FEATURE_GATES naming every gate's value."""
    return ",".join(f"{name}={str(value).lower()}" for name, value in gates.as_dict().items())


def raycluster_rule_violations() -> list[BadInput]:
    """One RayService per case of the RayCluster rule table (ValidateRayClusterSpec) that KubeRay rejects,
    the case's spec as its rayClusterConfig, its annotations on the RayService, with KubeRay's message as
    ValidateRayServiceSpec wraps it and the feature gates the table judges the case under."""
    violations = []
    for name, table_changes, expected in raycluster_rules.CASES:
        if expected is None:
            continue
        changes = dict(table_changes)
        annotations = changes.pop("__annotations__", {})
        gates = changes.pop("__gates__", raycluster_rules.ALL_GATES)
        manifest = copy.deepcopy(rayservice_rules.base())
        cluster = raycluster_rules.patched(raycluster_rules.base(), changes)
        manifest["spec"]["rayClusterConfig"] = cluster
        if annotations:
            manifest["metadata"]["annotations"] = annotations
        token_auth = bool((cluster.get("authOptions") or {}).get("enableK8sTokenAuth"))
        message = RAYSERVICE_TOKEN_AUTH if token_auth else "The RayService spec is invalid: " + expected
        violations.append(
            BadInput(f"RayCluster: {name}", "RayService", json.dumps(manifest), message, gates=gates)
        )
    return violations


def _rayjob(**changes: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(rayjob_rules.base())
    manifest.update(changes)
    return manifest


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def malformed() -> list[BadInput]:
    """Input beyond the rule tables: broken syntax, wrong apiVersion or kind, unknown fields, size, depth."""
    valid = _rayjob()
    unknown = _rayjob()
    unknown["spec"] = {**unknown["spec"], "entrypiont": "python main.py"}
    long_name = _rayjob(metadata={"name": "n" * 64, "namespace": "default"})
    huge = _rayjob(metadata={"name": "huge", "namespace": "default", "annotations": {"blob": "x" * 10 * MIB}})
    # Deeper than Python's parsers go, within the Kubernetes API server's (and the temporal CLI's) limit.
    deep = json.dumps(valid)[:-1] + f', "status": {_nested(5_000)}}}'
    return [
        BadInput("malformed YAML", "RayJob", "kind: RayJob\nmetadata: [\n", "invalid YAML at line 3", False),
        BadInput("malformed JSON", "RayJob", '{"kind": "RayJob",', "invalid JSON at line 1", False),
        BadInput("not an object", "RayJob", "[1, 2]", "must be a mapping", False),
        BadInput(
            "wrong apiVersion", "RayJob", json.dumps(_rayjob(apiVersion="ray.io/v2")), "ray.io/v2", False
        ),
        BadInput(
            "wrong kind",
            "RayJob",
            json.dumps(_rayjob(kind="Pod")),
            'unsupported kind "Pod"',
            False,
            cli_message="a Pod goes to Kubernetes",
        ),
        BadInput("unknown field", "RayJob", json.dumps(unknown), 'unknown field "spec.entrypiont"', False),
        BadInput(
            "name over 63 characters",
            "RayJob",
            json.dumps(long_name),
            "The RayJob metadata is invalid: RayJob name should be no more than 47 characters",
        ),
        # Temporal itself refuses a start or update this large (gRPC: "larger than max").
        BadInput("10 MiB manifest", "RayJob", json.dumps(huge), "large", False),
        BadInput("deeply nested", "RayJob", deep, "nested too deeply", False),
    ]
