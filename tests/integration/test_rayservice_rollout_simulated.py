"""raypilot.io/rollout through the real worker (issue #18), one stack per module:
- automatic rollback of a failing v2 and fast undo, blue-green under steady load through the serve Service's
  clusterIP (tests/integration/rollback_checks.py), with simulated Ray on the real stack (on real Ray
  Serve: test_rayservice_rollout_real.py);
- headerCanary on the real stack (`kube_stack`): during an incremental upgrade paused before any
  weighted traffic, a request carrying the header reaches v2 through the Gateway while the weights stay
  100/0 and every other request reaches v1; after abort only v1 answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from models.rollout import ANNOTATION_ROLLOUT
from tests.integration.rollback_checks import assert_rolled_back_and_undone_in_place, check_rollback_and_undo
from tests.integration.route_watch import routed_gateway_url
from tests.integration.stack import Stack
from tests.integration.test_rayservice_incremental import (
    eventually,
    manifest,
    sides,
)


@pytest.mark.devserver
@pytest.mark.timeout(300)
async def test_failing_v2_rolled_back_and_undo_restores_v1_simulated(kube_stack: Stack) -> None:
    run = await check_rollback_and_undo(kube_stack, within=120)
    assert_rolled_back_and_undone_in_place(run)
    print(f"rollback/undo (simulated): {run}")


ROLLOUT = {
    "steps": [{"pause": "indefinite"}, {"traffic": 100}],
    "headerCanary": {"name": "x-canary", "value": "1"},
}


def with_rollout(body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"]["annotations"] = {ANNOTATION_ROLLOUT: json.dumps(ROLLOUT)}
    return body


async def versions(url: str, headers: dict[str, str], count: int = 10) -> set[str]:
    async with httpx.AsyncClient(timeout=10) as client:
        return {(await client.get(url, headers=headers)).json()["version"] for _ in range(count)}


async def test_a_request_with_the_header_reaches_v2_while_the_weights_are_zero(
    kube_stack: Stack,
) -> None:
    stack = kube_stack
    namespace = stack.namespace()
    handle = await stack.start(with_rollout(manifest(namespace, "v1")))
    await stack.wait_status(handle, lambda s: bool(sides(s)[0].get("rayClusterName")), within=120, what="v1")

    address = await routed_gateway_url(stack.custom, namespace, "rs-inc")
    await handle.execute_update("apply", with_rollout(manifest(namespace, "v2")), result_type=dict)

    def paused_before_traffic(status: dict[str, Any]) -> bool:
        _, pending = sides(status)
        paused = any(c["type"] == "UpgradeControl" for c in status.get("conditions") or [])
        return paused and (pending.get("targetCapacity") or 0) > 0 and not pending.get("trafficRoutedPercent")

    status = await stack.wait_status(handle, paused_before_traffic, within=120, what="v2 paused at 0 %")

    async def canary_answers() -> bool | None:
        try:
            return (await versions(address, {"x-canary": "1"}, 1)) == {"v2"} or None
        except (httpx.HTTPError, ValueError):
            return None

    await eventually(canary_answers, within=30, what="the header rule programmed")
    assert await versions(address, {"x-canary": "1"}) == {"v2"}
    assert await versions(address, {}) == {"v1"}
    assert await versions(address, {"x-canary": "2"}) == {"v1"}
    assert sides(await stack.status(handle))[1].get("trafficRoutedPercent") in (None, 0)
    del status
    await handle.execute_update("abort", result_type=dict)
    await stack.wait_status(
        handle, lambda s: not sides(s)[1].get("rayClusterName"), within=120, what="rolled back"
    )

    async def only_v1() -> bool | None:
        return (await versions(address, {"x-canary": "1"}, 3)) == {"v1"} or None

    await eventually(only_v1, within=30, what="the header rule removed")
    await handle.execute_update("delete", result_type=dict)
