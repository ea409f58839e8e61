"""S5 for the RayCluster rule table: every case KubeRay's ValidateRayClusterSpec rejects (the unit table of
tests/models/validation/test_raycluster.py), as a RayService's rayClusterConfig, through the three doors:
`raypilot apply`, the temporal CLI and the `apply` update of a live RayService.

Each case is judged under the feature gates its table row names (the operator's RAYPILOT_FEATURE_GATES: the
CLI and the worker read them from the environment, a live workflow when it starts). Pass means KubeRay's
message exactly, nothing created, and the live workflows untouched (no accepted update, still their first
generation; a RayService keeps reconciling meanwhile, so its history grows).
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle

from models.features import FEATURE_GATES_ENV, FeatureGates
from tests.integration.rayservice_helpers import rayservice, wait_for_status
from tests.integration.stack import Stack
from tests.models.validation import test_raycluster as raycluster_rules
from tests.reliability.bad_input import BadInput, gates_env, raycluster_rule_violations
from tests.reliability.figures import FULL, SEED, figure
from tests.reliability.ledger import Ledger
from tests.reliability.test_s5_bad_input import (
    accepted_updates,
    addressed_to,
    apply_answer,
    check,
    check_temporal_start,
    initializing,
    objects_everywhere,
    raypilot_apply_answer,
)

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(900 if FULL else 120)]


@pytest.fixture
def operator_gates(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sets the in-process worker's RAYPILOT_FEATURE_GATES (read by each workflow when it starts)."""

    def use(gates: FeatureGates | None) -> None:
        monkeypatch.setenv(FEATURE_GATES_ENV, gates_env(gates or FeatureGates()))

    return use


async def test_raypilot_apply_rejects_every_raycluster_rule(reliability_stack: Stack, tmp_path: Path) -> None:
    stack, recorded, problems = reliability_stack, figure("S5", "RayCluster rules: raypilot apply"), []
    workflows_before, objects_before = await stack.client.count_workflows(), objects_everywhere(stack)
    for index, case in enumerate(raycluster_rule_violations()):
        env = {
            "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host,
            "RAYPILOT_TASK_QUEUE": stack.task_queue,
            "HOME": "/nonexistent",
            FEATURE_GATES_ENV: gates_env(case.gates or FeatureGates()),
        }
        message = await raypilot_apply_answer(env, case, tmp_path / f"case-{index}.yaml")
        check(recorded, case, "raypilot apply", message, problems)
    assert (await stack.client.count_workflows()).count == workflows_before.count, "a workflow was started"
    assert not objects_everywhere(stack) - objects_before, "an object was created"
    assert not problems, "\n".join(problems)


async def test_temporal_cli_start_rejects_every_raycluster_rule(
    reliability_stack: Stack, ledger: Ledger, tmp_path: Path, operator_gates: Any
) -> None:
    stack, recorded, problems = (
        reliability_stack,
        figure("S5", "RayCluster rules: temporal workflow start"),
        [],
    )
    cases = raycluster_rule_violations()
    if not FULL:  # each start runs a workflow: a seeded sample in `make test`
        cases = random.Random(SEED).sample(cases, 5)
    objects_before = objects_everywhere(stack)
    for index, case in enumerate(cases):
        operator_gates(case.gates)
        path = tmp_path / f"s5-rc-{uuid.uuid4().hex[:8]}-{index}.json"
        path.write_text(case.text)
        await check_temporal_start(stack, ledger, recorded, case, path, problems)
    assert not objects_everywhere(stack) - objects_before, "an object was created"
    assert not problems, "\n".join(problems)


async def test_apply_update_rejects_every_raycluster_rule_and_leaves_the_workflow_alone(
    reliability_stack: Stack, ledger: Ledger, operator_gates: Any
) -> None:
    stack, recorded, problems = reliability_stack, figure("S5", "RayCluster rules: apply update, live"), []
    namespace = stack.namespace()
    cases = raycluster_rule_violations()
    if not FULL:  # one live RayService in `make test`: the cases under the table's usual gates (all but 5)
        usual = raycluster_rules.ALL_GATES
        cases = [case for case in cases if case.gates == usual]
    # One live RayService per set of gates the table uses: a workflow reads the gates when it starts.
    live: dict[FeatureGates | None, WorkflowHandle[Any, Any]] = {}
    for gates in dict.fromkeys(case.gates for case in cases):
        operator_gates(gates)
        handle = await stack.start(rayservice(namespace, f"live-{len(live)}", "v1"))
        # It read the gates once it initializes: only then may the next one be set.
        await wait_for_status(stack, handle, initializing, within=60, what="RayService initializing")
        live[gates] = handle
    for case in cases:
        handle = live[case.gates]
        document = addressed_to(case, handle.id)
        assert document is not None, case.name
        message = await apply_answer(handle, document)
        check(recorded, case, "apply update", message, problems)
    for gates, handle in live.items():
        assert not await accepted_updates(handle), f"an update was accepted ({gates})"
        assert (await stack.status(handle)).get("observedGeneration") == 1, "a new generation"
        await handle.execute_update("delete")
        await handle.result()
        await ledger.record(handle)
    assert not problems, "\n".join(problems)


def test_the_table_has_every_rule() -> None:
    """The S5 RayCluster cases are the unit table's rejected cases, one each (none dropped on the way)."""
    cases: list[BadInput] = raycluster_rule_violations()
    assert len({case.name for case in cases}) == len(cases) >= 60
