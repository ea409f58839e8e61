"""What the RayJob integration tests share: example manifests, Events on the RayJob, a user's view of a Ray
dashboard (through the API server's service proxy, as `kubectl proxy` users reach it), and history sizes."""

from __future__ import annotations

import copy
import re
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from kubernetes import watch
from temporalio.client import WorkflowHandle

from activities.kubernetes.async_api import ssl_context
from sandbox.ray.simulated import DASHBOARD_REQUESTS_COUNTER
from sandbox.testing import ready_raycluster, wait_until
from tests.integration.stack import Stack
from tests.readiness import with_quick_readiness
from tests.workflows.timer_dues import deletion_timer_windows

EXAMPLES = Path(__file__).parents[2] / "examples"


# A RayJob leaves Initializing once its RayCluster is Ready: every container of every Pod ready (KubeRay's
# CheckAllPodsRunning). A SidecarMode submitter that has ended is a container that is not ready, and the
# head's readiness probe passes only after its first period (KubeRay's own: 10 s after the head starts at
# the earliest; the tests' quick one: 1 s); so on a real kubelet (the real stack's node agent) a SidecarMode
# job shorter than that never leaves Initializing, in KubeRay as here.
# (The sidecar's shell reads the entrypoint, as KubeRay writes it: `;` would end the submit command.)
OUTLASTS_THE_HEADS_READINESS_DELAY = 'python -c "import sys, time; time.sleep(6); sys.exit({code})"'


def example(name: str, namespace: str, *, rename: str = "", **spec: Any) -> dict[str, Any]:
    """examples/<name>.yaml in `namespace` (named `rename` if given), with `spec` fields replaced (None
    removes one) and the tests' quick readiness probes (tests/readiness.py)."""
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    manifest = copy.deepcopy(manifest)
    manifest["metadata"]["namespace"] = namespace
    if rename:
        manifest["metadata"]["name"] = rename
    for key, value in spec.items():
        if value is None:
            manifest["spec"].pop(key, None)
        else:
            manifest["spec"][key] = value
    if "rayClusterSpec" in manifest["spec"]:
        with_quick_readiness(manifest["spec"]["rayClusterSpec"])
    return manifest


def rayjob_events(stack: Stack, namespace: str, rayjob: str) -> list[dict[str, str]]:
    """(reason, message, type) of the Kubernetes Events whose involved object is the RayJob."""
    events = stack.core.list_namespaced_event(namespace).items
    return [
        {"reason": str(event.reason), "message": str(event.message), "type": str(event.type)}
        for event in events
        if event.involved_object.kind == "RayJob" and event.involved_object.name == rayjob
    ]


def normal_event(reason: str, message: str) -> dict[str, str]:
    """A Normal Event with that reason and message, as `rayjob_events` lists it."""
    return {"reason": reason, "message": message, "type": "Normal"}


def reasons(events: list[dict[str, str]]) -> list[str]:
    return [event["reason"] for event in events]


def head_service(status: dict[str, Any]) -> str:
    """The head Service named by a RayJob's status.dashboardURL (`<svc>.<ns>.svc.<domain>:<port>`)."""
    return str(status["dashboardURL"]).split(".", 1)[0]


def dashboard_base(stack: Stack, namespace: str, service: str) -> str:
    host = stack.api_client.configuration.host.rstrip("/")
    return f"{host}/api/v1/namespaces/{namespace}/services/{service}:dashboard/proxy"


async def through_api_server(stack: Stack, method: str, url: str, body: Any = None) -> httpx.Response:
    """One request to an API server URL (a Service's or Pod's proxy) as a user outside the cluster makes it
    (with the credentials of the test's kubeconfig, which a real API server asks for)."""
    async with httpx.AsyncClient(timeout=10.0, verify=ssl_context(stack.api_client.configuration)) as http:
        return await http.request(method, url, json=body)


async def dashboard(
    stack: Stack, namespace: str, service: str, method: str, path: str, body: Any = None
) -> httpx.Response:
    """One request to a RayCluster's dashboard through the API server."""
    return await through_api_server(stack, method, dashboard_base(stack, namespace, service) + path, body)


# The GETs of a simulated head's job routes, by route (`/api/jobs/`, a list; `/api/jobs/{job_id}`, one job),
# in the request counter it exports on its metrics port as Ray's dashboard does.
JOB_READS = re.compile(
    rf'^{DASHBOARD_REQUESTS_COUNTER}\{{[^}}]*endpoint="(/api/jobs/(?:\{{job_id\}})?)",method="GET"\}} (\S+)$',
    re.MULTILINE,
)


def job_reads_in(exposition: str) -> Counter[str]:
    """The job routes' GETs in a dashboard's metrics exposition, by route."""
    reads = Counter[str]()
    for route, value in JOB_READS.findall(exposition):
        reads[route] += int(float(value))
    return reads


def head_pod_name(stack: Stack, namespace: str, cluster: str) -> str:
    selector = f"ray.io/cluster={cluster},ray.io/node-type=head"
    [pod] = stack.core.list_namespaced_pod(namespace, label_selector=selector).items
    return str(pod.metadata.name)


async def job_reads(stack: Stack, namespace: str, pod: str) -> Counter[str]:
    """The job routes' GETs a head Pod's dashboard has answered so far (its metrics port, 8080 in a Pod)."""
    host = stack.api_client.configuration.host.rstrip("/")
    url = f"{host}/api/v1/namespaces/{namespace}/pods/{pod}:8080/proxy/metrics"
    answer = await through_api_server(stack, "GET", url)
    answer.raise_for_status()
    return job_reads_in(answer.text)


async def submit_ray_job(
    stack: Stack, namespace: str, service: str, submission_id: str, entrypoint: str
) -> None:
    """What `ray job submit --submission-id ...` does: POST /api/jobs/."""
    answer = await dashboard(
        stack,
        namespace,
        service,
        "POST",
        "/api/jobs/",
        {"entrypoint": entrypoint, "submission_id": submission_id},
    )
    assert answer.status_code == 200, answer.text


async def ray_job(stack: Stack, namespace: str, service: str, submission_id: str) -> dict[str, Any]:
    answer = await dashboard(stack, namespace, service, "GET", f"/api/jobs/{submission_id}")
    assert answer.status_code == 200, answer.text
    details: dict[str, Any] = answer.json()
    return details


async def history_length(handle: WorkflowHandle[Any, Any]) -> int:
    history = await handle.fetch_history()
    return len(history.events)


def rayclusters(stack: Stack, namespace: str) -> list[dict[str, Any]]:
    listed = stack.custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    items: list[dict[str, Any]] = listed["items"]
    return items


async def create_raycluster(
    stack: Stack, manifest: dict[str, Any], *, within: float = 60.0
) -> dict[str, Any]:
    """Create a RayCluster as a user would (kubectl apply), with the tests' quick readiness probes, and wait
    until it is ready."""
    with_quick_readiness(manifest["spec"])
    namespace = manifest["metadata"]["namespace"]
    name = manifest["metadata"]["name"]
    stack.custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", manifest)

    async def ready() -> dict[str, Any] | None:
        return ready_raycluster(stack.custom, namespace, name)

    return await wait_until(ready, within=within, interval=0.2, what=f"RayCluster {namespace}/{name} ready")


def ray_io_events(stack: Stack, namespace: str, plural: str, within: float) -> Iterator[dict[str, Any]]:
    """The watch events of `namespace`'s ray.io/v1 `plural` for up to `within` seconds (blocking: run it in
    a thread); the watch stops when the caller stops iterating."""
    watcher = watch.Watch()
    try:
        yield from watcher.stream(
            stack.custom.list_namespaced_custom_object,
            "ray.io",
            "v1",
            namespace,
            plural,
            timeout_seconds=int(within),
        )
    finally:
        watcher.stop()


def first_raycluster_deletion(stack: Stack, namespace: str, *, within: float) -> float:
    """Blocks until a RayCluster of `namespace` starts being deleted (a watch sees its deletionTimestamp or
    its DELETED event); returns that wall-clock moment (time.time()). Run it in a thread."""
    for event in ray_io_events(stack, namespace, "rayclusters", within):
        if event["type"] == "DELETED" or event["object"]["metadata"].get("deletionTimestamp"):
            return time.time()
    raise AssertionError(f"no RayCluster of {namespace} was deleted within {within} s")


def parse_time(text: str) -> float:
    """An RFC3339 "Z" time of a status as seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# How long after its due time a deletion may be seen in these tests: a loaded machine's delay of the workflow
# task the timer wakes and of one API request, not raypilot's lag (bench P2 and P2K measure that).
DELETION_SEEN_WITHIN_S = 10.0


async def assert_deleted_when_due(handle: WorkflowHandle[Any, Any], deleted_at: float, due: float) -> None:
    """A deletion timed where the workflow decides it: a deletion timer set for `due` (endTime + its TTL) in
    the history, whose workflow time holds none of the machine's delays; and the RayCluster's deletion, seen
    at `deleted_at` (wall clock), no earlier than that and not long after."""
    windows = await deletion_timer_windows(handle)
    slack = 0.001  # the history's times are milliseconds
    assert any(
        earliest.timestamp() - slack <= due <= latest.timestamp() + slack for earliest, latest in windows
    ), f"no deletion timer was set for endTime + TTL ({due:.3f}); timers: {windows}"
    lag = deleted_at - due
    assert -0.05 <= lag <= DELETION_SEEN_WITHIN_S, (
        f"RayCluster deletion observed {lag:+.3f} s from its due time"
    )
