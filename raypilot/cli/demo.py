"""`raypilot demo`: everything end to end on this machine.

Starts the Temporal dev server (Web UI), the sandbox with real Ray and a worker; creates a RayCluster,
submits a Ray job to its dashboard through the Kubernetes API server's service proxy and shows it succeed.
The workflow issues replace the middle part with RayJob and RayService workflows.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from models.manifest import load_manifest_text
from raypilot.cli.stack import LocalStack, StackError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER_NAME = "demo-cluster"
NAMESPACE = "default"
CLUSTER_READY_PATIENCE = 180
JOB_PATIENCE = 180
DEMO_ENTRYPOINT = "python -c \"import ray; ray.init(); print('cluster resources:', ray.cluster_resources())\""


class DemoFailed(RuntimeError):
    pass


@contextmanager
def step(title: str, timings: list[tuple[str, float]]) -> Iterator[None]:
    print(f"-> {title} ...", flush=True)
    started = time.monotonic()
    yield
    elapsed = time.monotonic() - started
    timings.append((title, elapsed))
    print(f"   done in {elapsed:.1f} s", flush=True)


def demo_cluster_manifest() -> dict[str, Any]:
    manifest = load_manifest_text((EXAMPLES / "raycluster.yaml").read_text())
    manifest["metadata"] = {"name": CLUSTER_NAME, "namespace": NAMESPACE}
    return manifest


def wait_for_cluster_ready(api: k8s.CustomObjectsApi) -> dict[str, Any]:
    watcher = k8s_watch.Watch()
    for event in watcher.stream(
        api.list_namespaced_custom_object, "ray.io", "v1", NAMESPACE, "rayclusters",
        field_selector=f"metadata.name={CLUSTER_NAME}", timeout_seconds=CLUSTER_READY_PATIENCE,
    ):  # fmt: skip
        cluster: dict[str, Any] = event["object"]
        if cluster.get("status", {}).get("state") == "ready":
            watcher.stop()
            return cluster
    raise DemoFailed(f"RayCluster {CLUSTER_NAME} was not ready within {CLUSTER_READY_PATIENCE} s")


def dashboard_proxy_url(api_client: k8s.ApiClient) -> str:
    host = api_client.configuration.host.rstrip("/")
    return f"{host}/api/v1/namespaces/{NAMESPACE}/services/{CLUSTER_NAME}-head-svc:dashboard/proxy"


def run_job(dashboard: str, submission_id: str) -> dict[str, Any]:
    with httpx.Client(timeout=10.0, headers={"User-Agent": "raypilot-demo"}) as http:
        response = http.post(
            f"{dashboard}/api/jobs/", json={"entrypoint": DEMO_ENTRYPOINT, "submission_id": submission_id}
        )
        response.raise_for_status()
        deadline = time.monotonic() + JOB_PATIENCE
        while time.monotonic() < deadline:
            info: dict[str, Any] = http.get(f"{dashboard}/api/jobs/{submission_id}").json()
            if info.get("status") in ("SUCCEEDED", "FAILED", "STOPPED"):
                info["logs"] = http.get(f"{dashboard}/api/jobs/{submission_id}/logs").json().get("logs", "")
                return info
            time.sleep(0.5)  # the Jobs API has no watch: poll it gently
    raise DemoFailed(f"job {submission_id} did not finish within {JOB_PATIENCE} s")


def run_demo(workdir: Path, exit_after: bool, ray_mode: str = "real") -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    stack = LocalStack(workdir=workdir, ray_mode=ray_mode)
    timings: list[tuple[str, float]] = []
    ok = False
    try:
        with step("Temporal dev server", timings):
            stack.start_temporal()
        print(f"   Web UI: {stack.web_ui}")
        with step(f"sandbox with {ray_mode} Ray", timings):
            kubeconfig = stack.start_sandbox()
        print(f"   KUBECONFIG={kubeconfig}")
        with step("raypilot worker", timings):
            stack.start_worker()
        api_client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
        objects = k8s.CustomObjectsApi(api_client)
        with step(f"RayCluster {NAMESPACE}/{CLUSTER_NAME} ready", timings):
            objects.create_namespaced_custom_object(
                "ray.io", "v1", NAMESPACE, "rayclusters", demo_cluster_manifest()
            )
            wait_for_cluster_ready(objects)
        submission_id = f"demo-{int(time.time())}"
        with step(f"Ray job {submission_id}", timings):
            info = run_job(dashboard_proxy_url(api_client), submission_id)
        print(f"   status {info['status']}; last log lines:")
        for line in str(info.get("logs", "")).strip().splitlines()[-3:]:
            print(f"   | {line}")
        ok = info["status"] == "SUCCEEDED"
    except (StackError, DemoFailed, k8s.ApiException, httpx.HTTPError) as err:
        print(f"demo failed: {err}")
    print_summary(timings, ok, workdir)
    if ok and not exit_after:
        wait_for_interrupt(lambda: print("\nstopping everything the demo started ..."))
    stack.stop()
    return 0 if ok else 1


def print_summary(timings: list[tuple[str, float]], ok: bool, workdir: Path) -> None:
    print("\nsummary")
    for title, elapsed in timings:
        print(f"  {elapsed:6.1f} s  {title}")
    print(f"  result: {'every step succeeded' if ok else 'FAILED'}; logs in {workdir}")


def wait_for_interrupt(on_interrupt: Callable[[], None]) -> None:
    print("\neverything stays up (Web UI, sandbox, worker); press Ctrl-C to stop it all")
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    on_interrupt()
