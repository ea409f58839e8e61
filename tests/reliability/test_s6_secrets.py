"""S6: secrets never leave the worker. A RayJob and a RayService on clusters with Ray token auth run with the
dashboard failing now and then (errors are where a token slips into a message), then every workflow history,
search attribute set and log line of the whole reliability run is scanned for the Ray tokens and the bearer
token of the worker's kubeconfig.

Runs after S1-S5 (pytest orders the package's modules by name), so their histories are scanned too. The
other half of S6, the ClusterRoles in deploy/ equal to the requests the activities make (both ways), is
tests/docs/test_rbac.py.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any

import pytest
from kubernetes import client as k8s

from sandbox.faults import FaultRule
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import is_running, rayservice
from tests.integration.stack import Stack
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import FULL, SEED, figure
from tests.reliability.ledger import Ledger, readable

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(600 if FULL else 120)]

FLAKY_DASHBOARD = FaultRule(resources=frozenset({"services/proxy"}), error_rate=0.3, status=500)


def with_token_auth(stack: Stack, manifest: dict[str, Any], cluster_spec: str, secret: str) -> str:
    """`manifest` with its Ray asking for a token of its own, kept in the Secret `secret`, as token auth is
    set up under a KubeRay without authOptions (the real stack's 1.5: the API server prunes the field); the
    token, which raypilot reads from that Secret."""
    token = secrets.token_hex(16)
    namespace = manifest["metadata"]["namespace"]
    body = k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=secret), string_data={"auth_token": token})
    stack.core.create_namespaced_secret(namespace, body)
    token_ref = {"secretKeyRef": {"name": secret, "key": "auth_token"}}
    spec = manifest["spec"][cluster_spec]
    for group in [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]:
        ray = group["template"]["spec"]["containers"][0]
        ray.setdefault("env", []).extend(
            [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "valueFrom": token_ref}]
        )
    return token


async def test_no_secret_in_histories_search_attributes_or_logs(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger
) -> None:
    stack = reliability_stack
    namespace = stack.namespace()
    worker_api.set_faults([FLAKY_DASHBOARD], seed=SEED)
    try:
        job_manifest = example("rayjob-httpmode", namespace, entrypoint="sleep 1")
        service_manifest = rayservice(namespace, "secret", "v1")
        tokens = {
            with_token_auth(stack, job_manifest, "rayClusterSpec", "job-token"),
            with_token_auth(stack, service_manifest, "rayClusterConfig", "service-token"),
        }
        job = await stack.start(job_manifest)
        service = await stack.start(service_manifest)
        result = await job.result()
        await stack.wait_status(service, is_running, within=120, what="the RayService running")
    finally:
        worker_api.clear_faults()
    await service.execute_update("delete")
    await service.result()
    assert result["jobStatus"] == "SUCCEEDED", result
    ledger.secrets |= tokens
    for handle in (job, service):
        await ledger.record(handle)
    # Every workflow this run's worker served, whether or not its test recorded it.
    async for execution in stack.client.list_workflows(f'TaskQueue = "{stack.task_queue}"'):
        if f"{execution.id}@{execution.run_id}" not in ledger.histories:
            await ledger.record(stack.client.get_workflow_handle(execution.id))

    findings = ledger.findings()
    recorded = figure("S6", "secrets in histories, search attributes, logs")
    recorded.tried = len(ledger.histories) + len(ledger.search_attributes) + len(ledger.logs)
    recorded.survived = recorded.tried - len(findings)
    recorded.leaked = len(findings)
    recorded.notes.append(
        f"{len(ledger.secrets)} secrets x {len(ledger.histories)} histories, "
        f"{len(ledger.logs)} log lines; RBAC: tests/docs/test_rbac.py"
    )
    assert len(ledger.histories) >= 2
    assert not findings, "\n".join(findings[:20])


def test_the_scan_finds_a_secret_in_a_payload_or_a_log_line() -> None:
    """The scan itself: a secret in a (base64) payload of an exported history or in a log line is found."""
    payload = base64.b64encode(json.dumps({"token": "s3cret-value"}).encode()).decode()
    history = json.dumps({"events": [{"input": {"payloads": [{"data": payload}]}}]}, indent=2)
    ledger = Ledger(histories={"wf@run": readable(history)}, logs=["calm", "then s3cret-value"])
    ledger.secrets = {"s3cret-value"}
    assert ledger.findings() == ["history wf@run: s3cret...", "log line: s3cret..."]
