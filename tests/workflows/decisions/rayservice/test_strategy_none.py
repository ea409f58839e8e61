"""upgradeStrategy None: the spec change KubeRay ignores is reported (condition ClusterSpecNotApplied and one
Warning Event per goal), never applied."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus, find_condition
from models.operator import OperatorConfig
from models.rayservice import RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from tests.workflows.decisions.rayservice.test_cluster import (
    DEFAULT,
    Mutation,
    appended_group,
    cluster,
    new_ray_version,
    rayservice,
)
from workflows.decisions.rayservice.strategy_none import (
    CLUSTER_SPEC_NOT_APPLIED_CONDITION,
    UnappliedSpec,
    unapplied_cluster_spec,
    with_unapplied_spec_condition,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
UPGRADING = Condition(type="UpgradeInProgress", status=ConditionStatus.TRUE, reason="x")


@pytest.mark.parametrize(
    ("strategy", "goal_mutation", "pending", "conditions", "config", "reported"),
    [
        ("None", new_ray_version, False, [], DEFAULT, True),  # KubeRay ignores it silently; raypilot says so
        ("None", None, False, [], DEFAULT, False),  # the cluster runs the goal
        ("None", appended_group, False, [], DEFAULT, False),  # KubeRay applies appended groups in place
        ("NewCluster", new_ray_version, False, [], DEFAULT, False),  # a new cluster instead
        (None, new_ray_version, False, [], OperatorConfig(enable_zero_downtime=False), True),
        (None, new_ray_version, False, [], DEFAULT, False),  # zero-downtime on by default
        ("None", new_ray_version, True, [], DEFAULT, False),  # a pending cluster is being prepared
        ("None", new_ray_version, False, [UPGRADING], DEFAULT, False),  # an upgrade is running
    ],
)
def test_unapplied_cluster_spec(
    strategy: str | None,
    goal_mutation: Mutation | None,
    pending: bool,
    conditions: list[Condition],
    config: OperatorConfig,
    reported: bool,
) -> None:
    rs = rayservice(goal_mutation, strategy=strategy, conditions=[c.model_dump() for c in conditions])
    unapplied = unapplied_cluster_spec(rs, cluster(), cluster("svc-p") if pending else None, config)
    assert (unapplied is not None) is reported
    if unapplied is not None:
        assert unapplied.cluster == "svc-old"
        assert "NOT applied" in unapplied.message
        assert "ns/svc-old" in unapplied.message


def test_no_active_cluster_has_nothing_unapplied() -> None:
    assert unapplied_cluster_spec(rayservice(new_ray_version, strategy="None"), None, None, DEFAULT) is None


def test_the_condition_and_one_event_per_goal() -> None:
    first = UnappliedSpec("svc-old", "goal A not applied")
    status, events = with_unapplied_spec_condition(RayServiceStatuses(), first, NOW)
    condition = the_condition(status.conditions, CLUSTER_SPEC_NOT_APPLIED_CONDITION)
    assert (condition.status, condition.reason, condition.message) == (
        ConditionStatus.TRUE,
        "ZeroDowntimeUpgradeDisabled",
        "goal A not applied",
    )
    assert [(e.type, e.reason) for e in events] == [("Warning", "RayClusterSpecChangeNotApplied")]
    # The same goal on later passes: nothing new.
    again, events = with_unapplied_spec_condition(status, first, NOW + timedelta(seconds=5))
    assert again == status
    assert events == []
    # Another goal: the message follows and one more Event, the transition time stays.
    second, events = with_unapplied_spec_condition(
        status, UnappliedSpec("svc-old", "goal B not applied"), NOW + timedelta(seconds=9)
    )
    changed = the_condition(second.conditions, CLUSTER_SPEC_NOT_APPLIED_CONDITION)
    assert changed.message == "goal B not applied"
    assert changed.last_transition_time == NOW
    assert len(events) == 1
    # The goal is the cluster's again: the condition goes, silently.
    cleared, events = with_unapplied_spec_condition(second, None, NOW + timedelta(seconds=20))
    assert find_condition(cleared.conditions, CLUSTER_SPEC_NOT_APPLIED_CONDITION) is None
    assert events == []
    assert with_unapplied_spec_condition(cleared, None, NOW) == (cleared, [])
