"""What the benches on the real stack count, read from what that stack offers: the Kubernetes API requests of
one client from kube-apiserver's audit log (sandbox/realkube/audit.py's policy), and a simulated Ray head's
own counters (its requests per route and per path, its Ray jobs per state) from its metrics port, through
the API server's Pod proxy (sandbox/ray/simulated.py, `SIMULATION_COUNTERS_PATH`)."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sandbox.ray.simulated import SIMULATION_COUNTERS_PATH
from sandbox.realkube.controlplane import KUBERAY_ACCOUNT
from sandbox.realkube.install import NAMESPACE, WORKER_ACCOUNT
from tests.integration.rayjob_support import through_api_server
from tests.integration.stack import Stack

WORKER_USER = f"system:serviceaccount:{NAMESPACE}:{WORKER_ACCOUNT}"
KUBERAY_USER = f"system:serviceaccount:default:{KUBERAY_ACCOUNT}"  # its operator's pod runs in default
HEAD_METRICS_PORT = 8080  # a Ray image's --metrics-export-port, where a simulated head serves its counters


@dataclass(frozen=True)
class AuditMark:
    """A moment of the audit log: its size then (every request received later is written after it)."""

    offset: int
    at: float


def audit_mark(log: Path) -> AuditMark:
    return AuditMark(log.stat().st_size if log.exists() else 0, time.time())


def audited_since(
    log: Path,
    user: str,
    namespace: str,
    mark: AuditMark,
    *,
    cluster_wide: bool = False,
    until: float | None = None,
) -> Counter[str]:
    """ "<verb> <resource>[/<subresource>]" -> how many requests `user` made in `namespace` that the API
    server received after `mark` (and before `until`, a time.time(), if given): a watch counts when it
    starts, a proxied dashboard call is "get services/proxy". With `cluster_wide`, the requests of no
    namespace count too (an informer's list and watch of every namespace, a Node's read). A request is
    counted once, by its audit ID, whichever of its stages are logged."""
    counted: Counter[str] = Counter()
    seen: set[str] = set()
    with log.open("rb") as file:
        file.seek(mark.offset)
        text = file.read().decode(errors="replace")
    # A line being written as the log is read is left to the next read.
    for line in text[: text.rfind("\n") + 1].splitlines():
        event = json.loads(line)
        audit_id = str(event.get("auditID"))
        if event.get("user", {}).get("username") != user or audit_id in seen:
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        target = event.get("objectRef") or {}
        if received < mark.at or (until is not None and received >= until):
            continue
        found = target.get("namespace")
        if found != namespace and not (cluster_wide and not found):
            continue
        seen.add(audit_id)
        resource = str(target.get("resource", ""))
        if target.get("subresource"):
            resource += f"/{target['subresource']}"
        counted[f"{event.get('verb')} {resource}"] += 1
    return counted


# The kubelet's probes of a head (tests/readiness.py, KubeRay's own): no client of raypilot's sends them.
PROBE_ROUTES = frozenset({"GET /api/gcs_healthz", "GET /api/local_raylet_healthz"})


def without_probes(requests: Counter[str]) -> Counter[str]:
    return Counter({key: count for key, count in requests.items() if key not in PROBE_ROUTES})


def without_proxy(requests: Counter[str]) -> int:
    """The requests that are the Kubernetes API's own: dashboard calls through its proxy left out."""
    return sum(count for key, count in requests.items() if not key.endswith("/proxy"))


@dataclass(frozen=True)
class HeadCounters:
    """A simulated head's counts so far: requests per "<METHOD> <route>" and per "<METHOD> <path>", and
    its Ray jobs per state."""

    routes: Counter[str]
    paths: Counter[str]
    job_states: Counter[str]


async def head_counters(stack: Stack, namespace: str, pod: str) -> HeadCounters:
    """A head Pod's counters, read through the API server as its admin (no request of its dashboard)."""
    host = stack.api_client.configuration.host.rstrip("/")
    proxy = f"{host}/api/v1/namespaces/{namespace}/pods/{pod}:{HEAD_METRICS_PORT}/proxy"
    answer = await through_api_server(stack, "GET", proxy + SIMULATION_COUNTERS_PATH)
    answer.raise_for_status()
    found = answer.json()
    return HeadCounters(Counter(found["routes"]), Counter(found["paths"]), Counter(found["jobStates"]))
