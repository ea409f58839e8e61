"""`raypilot demo`: everything end to end on this machine.

Starts the Temporal dev server (Web UI, empty database), the sandbox (the real Kubernetes stack `make kube`
built, as root; its pods run real Ray by default, simulated Ray with `--ray simulated`), a worker and the
controller, both authenticating as their ServiceAccounts; then, through the workflows as `raypilot apply`
starts them:
1. a K8sJobMode RayJob whose DeleteCluster rule removes its RayCluster 10 s after the job ended, applied as
   `raypilot.io/v1` (the CRDs installed, `raypilot controller` beside the worker) and shown both as its
   workflow's status and as `kubectl get rayjobs.raypilot.io -w` shows it;
2. a RayService v1, then v2 as a NewClusterWithIncrementalUpgrade under a steady load through the Gateway,
   with a live view, a summary of the steps and an upgrade timeline PNG in the demo directory.
Then it stays up until Ctrl-C (or, with --exit, stops at once) and stops everything it started.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from temporalio.exceptions import TemporalError

from raypilot.cli.demo_kubectl import install_crds
from raypilot.cli.demo_rayjob import run_rayjob
from raypilot.cli.demo_rayservice import SERVICE_NAME, deploy_first_version, upgrade_under_load
from raypilot.cli.demo_support import DemoContext, DemoPace
from raypilot.cli.demo_view import JobReport, UpgradeReport, job_summary, upgrade_summary
from raypilot.cli.stack import TEMPORAL_PORT, UI_PORT, LocalStack
from raypilot.load import FAILED
from raypilot.settings import TemporalSettings, connect

NAMESPACE = "default"
DEMO_PACE = DemoPace()


@contextmanager
def step(title: str, timings: list[tuple[str, float]]) -> Iterator[None]:
    print(f"-> {title} ...", flush=True)
    started = time.monotonic()
    yield
    elapsed = time.monotonic() - started
    timings.append((title, elapsed))
    print(f"   done in {elapsed:.1f} s", flush=True)


def emit(line: str) -> None:
    print(line, flush=True)


def job_succeeded(report: JobReport) -> bool:
    return (
        report.phase == "Complete"
        and report.job_status == "SUCCEEDED"
        and report.cluster_deleted_after_end_s is not None
    )


def upgrade_succeeded(report: UpgradeReport) -> bool:
    """Completed, and not one request lost: the point of an incremental upgrade."""
    return report.total_s is not None and report.counts.get(FAILED, 0) == 0 and bool(report.new_cluster)


async def run_workloads(
    stack: LocalStack, kubeconfig: Path, pace: DemoPace, timings: list[tuple[str, float]], reports: list[str]
) -> bool:
    """The RayJob, then the RayService upgrade; True when both did what they should."""
    task_queue = TemporalSettings.from_env(os.environ).task_queue
    client = await connect(TemporalSettings(address=stack.temporal_address, task_queue=task_queue))
    api_client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    context = DemoContext(client, task_queue, k8s.CustomObjectsApi(api_client), NAMESPACE, emit, pace)
    try:
        title = (
            f"RayJob raypilot.io/v1 (K8sJobMode, DeleteCluster {pace.delete_cluster_ttl_s} s after the end)"
        )
        with step(title, timings):
            job = await run_rayjob(context)
        reports += job_summary(job)
        with step(f"RayService {SERVICE_NAME} v1 first deployment", timings):
            deployed = await deploy_first_version(context)
        with step("RayService v1 -> v2 incremental upgrade under load", timings):
            upgrade = await upgrade_under_load(deployed, stack.workdir)
        reports += upgrade_summary(upgrade)
        return job_succeeded(job) and upgrade_succeeded(upgrade)
    finally:
        api_client.close()


def install_demo_crds(kubeconfig: Path) -> None:
    api_client = k8s_config.new_client_from_config(config_file=str(kubeconfig))
    try:
        install_crds(api_client)
    finally:
        api_client.close()


def run_demo(
    workdir: Path,
    exit_after: bool,
    ray_mode: str = "real",
    temporal_port: int = TEMPORAL_PORT,
    ui_port: int = UI_PORT,
    pace: DemoPace = DEMO_PACE,
) -> int:
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)  # a plain kill must still stop what the demo started
    stack = LocalStack(workdir=workdir, ray_mode=ray_mode, temporal_port=temporal_port, ui_port=ui_port)
    timings: list[tuple[str, float]] = []
    reports: list[str] = []
    ok = False
    try:
        with step("Temporal dev server", timings):
            stack.start_temporal()
        print(f"   Web UI: {stack.web_ui}", flush=True)
        with step(f"sandbox with {ray_mode} Ray", timings):
            kubeconfig = stack.start_sandbox()
        print(f"   real Kubernetes; KUBECONFIG={kubeconfig}", flush=True)
        with step("raypilot worker", timings):
            stack.start_worker()
        with step("raypilot.io CRDs and raypilot controller", timings):
            install_demo_crds(kubeconfig)
            stack.start_controller()
        ok = asyncio.run(run_workloads(stack, kubeconfig, pace, timings, reports))
    except (k8s.ApiException, TemporalError, RuntimeError, TimeoutError, OSError) as err:
        # StackError and DemoFailed are RuntimeErrors; TemporalError covers RPC, update and workflow failures.
        print(f"demo failed: {type(err).__name__}: {err}", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted; stopping everything the demo started ...", flush=True)
        stack.stop()
        return 1
    print_summary(timings, reports, ok, stack)
    try:
        if not exit_after:
            wait_for_interrupt(stack, lambda: print("\nstopping everything the demo started ...", flush=True))
    finally:
        stack.stop()
    return 0 if ok else 1


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def print_summary(timings: list[tuple[str, float]], reports: list[str], ok: bool, stack: LocalStack) -> None:
    print("\nsummary")
    for title, elapsed in timings:
        print(f"  {elapsed:6.1f} s  {title}")
    for line in reports:
        print(f"  {line}")
    print(f"  result: {'every step succeeded' if ok else 'FAILED'}; logs in {stack.workdir}")
    print(f"  Web UI: {stack.web_ui}", flush=True)


def wait_for_interrupt(stack: LocalStack, on_interrupt: Callable[[], None]) -> None:
    print(
        "\neverything stays up (Web UI, sandbox, worker); try\n"
        f"  TEMPORAL_ADDRESS={stack.temporal_address} raypilot status rayservice/{NAMESPACE}/{SERVICE_NAME}\n"
        f"  KUBECONFIG={stack.kubeconfig} kubectl get rayclusters,gateways,httproutes\n"
        f"  KUBECONFIG={stack.kubeconfig} kubectl get rayjobs.raypilot.io -w\n"
        "press Ctrl-C to stop it all",
        flush=True,
    )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    on_interrupt()
