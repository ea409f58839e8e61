"""steps[].mirror of raypilot.io/rollout: which mirror a step of the plan has in effect, the HTTPRoute with
the RequestMirror filter, the first capacity step during a pause, and the condition and Events of a change
(tables)."""

from __future__ import annotations

import pytest

from models.meta import ConditionStatus
from models.rayservice import RayServiceStatuses
from models.rollout import HeaderCanary, RolloutStep
from tests.workflows.decisions.rayservice.upgrade.pending_support import T0, route, status
from workflows.decisions.rayservice.upgrade.gateway import is_http_route_equal, weights_from_http_route
from workflows.decisions.rayservice.upgrade.header_canary import with_header_canary
from workflows.decisions.rayservice.upgrade.mirror import (
    ROLLOUT_MIRROR_CONDITION,
    mirror_needs_capacity,
    mirror_percent,
    with_mirror,
    with_mirror_condition,
)
from workflows.decisions.rayservice.upgrade.step_plan import StepAction, StepProgress, step_plan_line

PLAN = [
    RolloutStep(pause="1m"),  # 0: no mirror yet
    RolloutStep(mirror=10, pause="5m"),  # 1: on
    RolloutStep(analysis="a"),  # 2: still on
    RolloutStep(mirror=25),  # 3: changed
    RolloutStep(mirror=0, pause="1m"),  # 4: off
    RolloutStep(mirror=5),  # 5: on again
    RolloutStep(traffic=10),  # 6: a traffic step ends it
    RolloutStep(pause="1m"),  # 7: stays off
]


@pytest.mark.parametrize(
    ("index", "percent"),
    [(None, 0), (0, 0), (1, 10), (2, 10), (3, 25), (4, 0), (5, 5), (6, 0), (7, 0), (99, 0)],
)
def test_the_mirror_in_effect_at_each_step(index: int | None, percent: int) -> None:
    assert mirror_percent(PLAN, index) == percent


def test_the_weighted_rule_gets_a_request_mirror_filter_to_the_pending_cluster() -> None:
    weighted = route(("old", 100), ("new", 0))
    result = with_mirror(weighted, status(), "new", 10)
    assert result is not None
    [rule] = result["spec"]["rules"]
    assert rule["backendRefs"] == weighted["spec"]["rules"][0]["backendRefs"]  # the weights do not move
    assert rule["filters"] == [
        {
            "type": "RequestMirror",
            "requestMirror": {
                "backendRef": {
                    "group": "",
                    "kind": "Service",
                    "name": "new-serve-svc",
                    "namespace": "ns",
                    "port": 8000,
                },
                "percent": 10,
            },
        }
    ]
    assert weights_from_http_route(result, "old", "new") == (100, 0)
    assert "filters" not in weighted["spec"]["rules"][0]  # the input is not changed
    # a route with the filter differs from one without (the update is written), and equals itself
    assert not is_http_route_equal(weighted, result)
    assert is_http_route_equal(result, with_mirror(route(("old", 100), ("new", 0)), status(), "new", 10))
    assert not is_http_route_equal(result, with_mirror(route(("old", 100), ("new", 0)), status(), "new", 25))


def test_the_mirror_sits_on_the_weighted_rule_beside_a_header_canary() -> None:
    canary = HeaderCanary(name="x-canary", value="1")
    both = with_mirror(
        with_header_canary(route(("old", 95), ("new", 5)), status(), "new", canary), status(), "new", 20
    )
    assert both is not None
    weighted, by_header = both["spec"]["rules"]
    assert [f["type"] for f in weighted["filters"]] == ["RequestMirror"]
    assert "filters" not in by_header


@pytest.mark.parametrize(
    ("percent", "state", "pending", "mirrored"),
    [
        (0, status(), "new", False),  # no mirror: the route is KubeRay's
        (10, status(rollback=True), "new", False),  # a rollback ends it
        (10, status(pending=""), "", False),  # no pending cluster (promoted)
        (10, status(), "other", False),  # the pending cluster is not in the rule yet
        (10, status(), "new", True),
    ],
)
def test_when_the_route_mirrors(
    percent: int, state: RayServiceStatuses, pending: str, mirrored: bool
) -> None:
    weighted = route(("old", 100), ("new", 0))
    result = with_mirror(weighted, state, pending, percent)
    assert result is not None
    assert ("filters" in result["spec"]["rules"][0]) is mirrored
    if not mirrored:
        assert result == weighted
    assert with_mirror(None, state, pending, percent) is None


@pytest.mark.parametrize(
    ("state", "percent", "needed"),
    [
        (status(capacity=0, traffic=0), 10, True),
        (status(capacity=None, traffic=None), 10, True),
        (status(capacity=0, traffic=0), 0, False),  # no mirror
        (status(capacity=50, traffic=0), 10, False),  # the first step was taken
        (status(capacity=0, traffic=0, rollback=True), 10, False),
        (status(pending="", capacity=0, traffic=0), 10, False),
    ],
)
def test_the_first_capacity_step_during_a_pause(
    state: RayServiceStatuses, percent: int, needed: bool
) -> None:
    assert mirror_needs_capacity(state, percent) is needed


def test_the_condition_and_events_of_a_change() -> None:
    unchanged, none = with_mirror_condition(status(), 0, 0, "new", T0)
    assert (unchanged, none) == (status(), [])
    on, [started] = with_mirror_condition(status(), 0, 10, "new", T0)
    [condition] = [c for c in on.conditions if c.type == ROLLOUT_MIRROR_CONDITION]
    assert (condition.status, condition.reason) == (ConditionStatus.TRUE, "Mirroring")
    assert condition.message.startswith("10 % of the requests are mirrored to RayCluster new")
    assert (started.type, started.reason) == ("Normal", "RolloutMirror")
    same, none_again = with_mirror_condition(on, 10, 10, "new", T0)
    assert (same, none_again) == (on, [])
    changed, [more] = with_mirror_condition(on, 10, 25, "new", T0)
    assert "25 %" in more.message
    off, [ended] = with_mirror_condition(changed, 25, 0, "new", T0)
    assert not any(c.type == ROLLOUT_MIRROR_CONDITION for c in off.conditions)
    assert ended.reason == "RolloutMirrorEnded"


def test_the_step_line_says_a_mirror_is_on() -> None:
    action = StepAction(StepProgress("new", 1), 0, "pause")
    assert step_plan_line(action, 4, 10) == "step 2 of 4: pausing (traffic up to 0 %, mirroring 10 %)"
    assert step_plan_line(action, 4) == "step 2 of 4: pausing (traffic up to 0 %)"
