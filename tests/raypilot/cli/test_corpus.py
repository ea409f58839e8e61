"""The corpus (tests/corpus/: one realistic manifest per feature KubeRay's samples exercise) applied as users
apply it: all files at once through `raypilot apply -f tests/corpus`, each in its own namespace, on the real
stack (KubeRay's operator turning raypilot's RayClusters into pods, the node agent running them with simulated
Ray); then every object must progress (RayService Running, RayJob Running or Complete, InteractiveMode
Waiting). A feature the stack cannot run is skipped by name, with the reason."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from models.naming import LABEL_CLUSTER, LABEL_NODE_TYPE, SUBMITTER_CONTAINER_NAME
from sandbox.testing import ConditionTimeout, wait_until
from tests.raypilot.cli.conftest import CliResult, CliStack

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(240)]

CORPUS = Path(__file__).parents[2] / "corpus"
FEATURES = sorted(path.stem for path in CORPUS.glob("*.yaml"))
# The CRDs of what the corpus applies beside its Ray objects that the real stack does not install.
SCHEDULER_CRDS = Path(__file__).with_name("volcano_queue_crd.yaml")
# Features the stack cannot run, by corpus file name, with the reason (a test skipped by that name). Empty
# since the node agent stands in for KubeRay's light-weight submitter image (sandbox/images/).
STACK_CANNOT_RUN: dict[str, str] = {}
# A SidecarMode job that ends before the head Pod is first Ready (KubeRay's readiness probe starts 10 s after
# the head) leaves the RayJob Initializing for good, in KubeRay 1.5 and in raypilot, which follows it: the
# ended submitter container keeps the Pod NotReady, so the RayCluster never gets to ready. The corpus's
# one-second job races the probe (a loaded machine delays the submission past it): the test says which way
# it went, as an expected failure naming this when the job lost the race.
SIDECAR_ENDED_FIRST = (
    "a SidecarMode job that ends before its head Pod is first Ready keeps the RayJob Initializing "
    "(KubeRay 1.5 does the same)"
)
# What "progresses" means for each kind of object, read from the status query.
PROGRESSED_RAYJOB = frozenset({"Running", "Complete"})
# A RayJob in one of these never gets to Running or Complete again: the test fails at once, with its status.
ENDED_RAYJOB = frozenset({"Failed", "ValidationFailed"})
WAITING_FOR_THE_USER = "Waiting"
# The server refuses queries while a workflow's last workflow task failed, until a retry completes. One
# failure is not the workflow's: the SDK's deadlock detection fails a task whose thread ran 2 s without
# yielding, which a starved thread does (forty-odd workflows, their activities' threads and this test share
# one process on a loaded 2-core machine); the server retries it. Any other failure fails the test with its
# message.
TASK_IN_FAILED_STATE = "Workflow Task in failed state"
QUERY_TIMED_OUT = "Timeout expired"  # the query reached no worker in time: its workflow task is held up
STARVED_TASK = "[TMPRL1101] Potential deadlock detected"
TIMED_OUT = "timed out"
STARTED_LINE = re.compile(r"^(ray(?:job|service))/(corpus-[a-z0-9-]+)/(\S+) started", re.MULTILINE)


def namespace_of(feature: str) -> str:
    return f"corpus-{feature}"


@pytest.fixture(scope="module")
async def applied_corpus(cli_stack: CliStack) -> AsyncIterator[CliResult]:
    plane = cli_stack.kube.plane
    plane.kubectl("apply", "--server-side", "-f", str(SCHEDULER_CRDS))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(SCHEDULER_CRDS))
    core = k8s.CoreV1Api(cli_stack.api_client)
    for feature in FEATURES:
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=namespace_of(feature))))
    applied = await cli_stack.run("apply", "-f", str(CORPUS))
    yield applied
    # The stack outlives the module (one per test process): the corpus's workflows end and its namespaces go,
    # so that forty-odd pods of simulated Ray do not run beside the next modules. The garbage collector and
    # the node agent finish the deletions in the background.
    for kind, namespace, name in STARTED_LINE.findall(applied.stdout):
        with contextlib.suppress(RPCError):  # a RayJob's run that completed already
            await cli_stack.client.get_workflow_handle(f"{kind}/{namespace}/{name}").terminate("corpus done")
    for feature in FEATURES:
        core.delete_namespace(namespace_of(feature), propagation_policy="Background")
    plane.kubectl("delete", "--wait=false", "-f", str(SCHEDULER_CRDS))


def test_every_feature_has_its_namespace() -> None:
    """Each corpus file puts its namespaced objects in corpus-<file name>, so they run side by side."""
    for feature in FEATURES:
        text = (CORPUS / f"{feature}.yaml").read_text()
        namespaces = set(re.findall(r"^  namespace: (\S+)$", text, re.MULTILINE))
        assert namespaces == {namespace_of(feature)}, feature


async def test_the_whole_corpus_applies_in_one_call(applied_corpus: CliResult) -> None:
    assert applied_corpus.code == 0, applied_corpus.stderr
    assert applied_corpus.stderr == ""
    started = {match[1] for match in STARTED_LINE.findall(applied_corpus.stdout)}
    assert started == {namespace_of(feature) for feature in FEATURES}
    # The objects beside the Ray ones went to Kubernetes, each line naming its object.
    assert "queue.scheduling.volcano.sh/corpus-research created" in applied_corpus.stdout
    assert "role.rbac.authorization.k8s.io/corpus-platform-events/ray-events-reader created" in (
        applied_corpus.stdout
    )


def progressed(kind: str, status: dict[str, Any], feature: str) -> bool:
    if kind == "rayservice":
        return status.get("serviceStatus") == "Running"
    phase = status.get("jobDeploymentStatus")
    if feature == "interactive-mode":
        return phase == WAITING_FOR_THE_USER
    return phase in PROGRESSED_RAYJOB


def sidecar_ended_before_ready(core: k8s.CoreV1Api, namespace: str, status: dict[str, Any]) -> str | None:
    """The SidecarMode submitter container's end, when it ended while the RayJob still waits for its cluster
    to be ready: a Pod with an ended container is never Ready again (restartPolicy Never)."""
    cluster = status.get("rayClusterName")
    if status.get("jobDeploymentStatus") != "Initializing" or not cluster:
        return None
    selector = f"{LABEL_CLUSTER}={cluster},{LABEL_NODE_TYPE}=head"
    for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
        for container in (pod.status and pod.status.container_statuses) or []:
            ended = container.state and container.state.terminated
            if container.name == SUBMITTER_CONTAINER_NAME and ended:
                return f"the head Pod's {container.name} exited {ended.exit_code} ({ended.reason})"
    return None


@pytest.mark.parametrize(
    "feature",
    [
        pytest.param(feature, marks=pytest.mark.skip(reason=f"{feature}: {STACK_CANNOT_RUN[feature]}"))
        if feature in STACK_CANNOT_RUN
        else feature
        for feature in FEATURES
    ],
)
async def test_each_feature_progresses_on_the_real_stack(
    feature: str, applied_corpus: CliResult, cli_stack: CliStack
) -> None:
    refs = {namespace: (kind, name) for kind, namespace, name in STARTED_LINE.findall(applied_corpus.stdout)}
    kind, name = refs[namespace_of(feature)]
    handle = cli_stack.client.get_workflow_handle(f"{kind}/{namespace_of(feature)}/{name}")
    core = k8s.CoreV1Api(cli_stack.api_client)

    async def advanced() -> dict[str, Any] | None:
        try:
            status: dict[str, Any] = await handle.query("status")
        except RPCError as error:
            problems = await task_problems(handle)
            refused = TASK_IN_FAILED_STATE in error.message or QUERY_TIMED_OUT in error.message
            if refused and problems and (STARVED_TASK in problems[-1] or problems[-1].endswith(TIMED_OUT)):
                return None  # a starved worker: the server retries the task; the wait goes on
            pytest.fail(f"{feature}: {error}\n{problems}\n{await history_outline(handle)}")
        if kind == "rayjob" and status.get("jobDeploymentStatus") in ENDED_RAYJOB:
            pytest.fail(f"{feature} ended without progressing: {status}\n{await history_outline(handle)}")
        if kind == "rayjob":
            # Off the event loop, which the module's worker shares.
            ended = await asyncio.to_thread(sidecar_ended_before_ready, core, namespace_of(feature), status)
            if ended:
                pytest.xfail(f"{SIDECAR_ENDED_FIRST}: {ended} before the RayCluster was ready: {status}")
        return status if progressed(kind, status, feature) else None

    # Forty-odd manifests start at once on a shared 2-core machine (beside other test files under xdist):
    # this checks that each progresses, not how fast. The wait ends before the test's timeout, so that a
    # feature that does not progress is reported with its last status and its workflow's history.
    try:
        await wait_until(advanced, within=200, interval=0.5, what=f"{feature} progressing")
    except ConditionTimeout as timeout:
        pytest.fail(f"{timeout}\n{await history_outline(handle)}")


async def task_problems(handle: WorkflowHandle[Any, Any]) -> list[str]:
    """The workflow's workflow tasks that did not complete, oldest first, as the history records them (the
    first of a run of failed attempts: the server does not record the retries): what failed each, or that it
    timed out. A starved worker shows as a task that timed out (the worker did not answer within the task
    timeout) or failed on the SDK's deadlock detection (a workflow thread without CPU for 2 s); anything else
    is a broken task."""
    problems = []
    for event in (await handle.fetch_history()).events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            problems.append(f"{event.event_id} {event.workflow_task_failed_event_attributes.failure.message}")
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            problems.append(f"{event.event_id} {TIMED_OUT}")
    return problems


async def history_outline(handle: WorkflowHandle[Any, Any]) -> str:
    """One line per event of the workflow's history: its id, time, type and the signal or marker it names."""
    lines = []
    for event in (await handle.fetch_history()).events:
        kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        attributes = event.WhichOneof("attributes")
        detail = getattr(event, attributes) if attributes else None
        named = getattr(detail, "signal_name", "") or getattr(detail, "marker_name", "")
        lines.append(f"{event.event_id} {event.event_time.ToJsonString()} {kind} {named}".rstrip())
    return "\n".join(lines)
