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
from typing import Any

import pytest

from sandbox.faults import FaultRule
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import is_running, rayservice
from tests.integration.stack import Stack
from tests.reliability.figures import FULL, SEED, figure
from tests.reliability.ledger import Ledger, readable
from tests.reliability.objects import store_list

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(600 if FULL else 120)]

FLAKY_DASHBOARD = FaultRule(resources=frozenset({"services/proxy"}), error_rate=0.3, status=500)


def with_token_auth(manifest: dict[str, Any], cluster_spec: str) -> dict[str, Any]:
    manifest["spec"][cluster_spec]["authOptions"] = {"mode": "token"}
    return manifest


def ray_tokens(stack: Stack, namespace: str) -> set[str]:
    """The Ray auth tokens of the namespace's clusters (the Secrets the sandbox made, as KubeRay does)."""
    return {
        base64.b64decode(secret["data"]["auth_token"]).decode()
        for secret in store_list(stack, "v1", "Secret", namespace)
        if "auth_token" in (secret.get("data") or {})
    }


async def test_no_secret_in_histories_search_attributes_or_logs(
    reliability_stack: Stack, ledger: Ledger
) -> None:
    stack = reliability_stack
    namespace = stack.namespace()
    stack.cluster.sandbox.faults.set_rules([FLAKY_DASHBOARD], seed=SEED)
    try:
        job = await stack.start(
            with_token_auth(example("rayjob-httpmode", namespace, entrypoint="sleep 1"), "rayClusterSpec")
        )
        service = await stack.start(
            with_token_auth(rayservice(namespace, "secret", "v1"), "rayClusterConfig")
        )
        result = await job.result()
        await stack.wait_status(service, is_running, within=120, what="the RayService running")
        tokens = ray_tokens(stack, namespace)
    finally:
        stack.cluster.sandbox.faults.clear()
    await service.execute_update("delete")
    await service.result()
    assert result["jobStatus"] == "SUCCEEDED", result
    assert len(tokens) == 2, "each cluster has its own token"
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
