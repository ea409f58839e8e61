"""Which raypilot.io/notify notifications a RayService's committed change is
(workflows/decisions/rayservice/notify.py): a table of status changes and Events."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models.meta import Condition, ConditionStatus
from models.notify import NotifyEvent
from models.rayservice import RayServiceStatus, RayServiceStatuses
from workflows.decisions.rayservice.conditions import RayServiceEvent
from workflows.decisions.rayservice.notify import rayservice_notifications

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def status(
    active: str = "", pending: str = "", traffic: int | None = None, control: str = ""
) -> RayServiceStatuses:
    conditions = []
    if control:
        conditions.append(
            Condition(
                type="UpgradeControl",
                status=ConditionStatus.TRUE,
                reason=control,
                message=f"paused ({control})",
                last_transition_time=NOW,
            )
        )
    return RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name=active),
        pending_service_status=RayServiceStatus(ray_cluster_name=pending, traffic_routed_percent=traffic),
        conditions=conditions,
    )


E = NotifyEvent
FAILED_GATE = RayServiceEvent("Warning", "AnalysisFailed", "Analysis errors failed on RayCluster b")


@pytest.mark.parametrize(
    ("before", "after", "events", "expected"),
    [
        (status(), status(pending="a"), [], []),  # the first deployment is not an upgrade
        (status(pending="a"), status(active="a"), [], []),  # nor its first cluster becoming active
        (status(active="a"), status(active="a", pending="b"), [], [E.STARTED]),
        (
            status(active="a", pending="b", traffic=0),
            status(active="a", pending="b", traffic=25),
            [],
            [E.STEP],
        ),
        (status(active="a", pending="b", traffic=25), status(active="a", pending="b", traffic=25), [], []),
        # traffic going back (a rollback in progress) is no step
        (status(active="a", pending="b", traffic=50), status(active="a", pending="b", traffic=25), [], []),
        (status(active="a", pending="b"), status(active="b"), [], [E.PROMOTED]),
        (status(active="a", pending="b", traffic=75), status(active="b", traffic=100), [], [E.PROMOTED]),
        (status(active="a", pending="b"), status(active="a"), [], [E.ROLLED_BACK]),
        # a failed post-promotion analysis switches the active cluster back to the one it replaced
        (status(active="b"), status(active="a"), [], [E.ROLLED_BACK]),
        (status(active="a", pending="b"), status(active="a", pending="b", control="Paused"), [], [E.PAUSED]),
        (
            status(active="a", pending="b"),
            status(active="a", pending="b", control="PausedByStepPlan"),
            [],
            [E.PAUSED],
        ),
        (
            status(active="a", pending="b"),
            status(active="a", pending="b", control="AwaitingPromotion"),
            [],
            [E.PAUSED],
        ),
        # still paused, or a control that is no pause
        (
            status(active="a", pending="b", control="Paused"),
            status(active="a", pending="b", control="Paused"),
            [],
            [],
        ),
        (
            status(active="a", pending="b"),
            status(active="a", pending="b", control="PromoteRequested"),
            [],
            [],
        ),
        (status(active="a", pending="b"), status(active="a", pending="b"), [FAILED_GATE], [E.FAILED]),
        # a Normal Event, or a Warning that judges no upgrade, notifies nothing
        (status(active="a"), status(active="a"), [RayServiceEvent("Normal", "RolloutPaused", "x")], []),
        (
            status(active="a"),
            status(active="a"),
            [RayServiceEvent("Warning", "FailedToCreateServeService", "x")],
            [],
        ),
        # one change, several notifications, in the order they happened
        (
            status(active="a"),
            status(active="a", pending="b", traffic=10, control="PausedByStepPlan"),
            [],
            [E.STARTED, E.PAUSED],
        ),
        (
            status(active="a", pending="b", traffic=50),
            status(active="a"),
            [FAILED_GATE],
            [E.FAILED, E.ROLLED_BACK],
        ),
    ],
    ids=[
        "first-deployment",
        "first-cluster-active",
        "started",
        "step",
        "same-traffic",
        "traffic-back",
        "promoted",
        "promoted-incremental",
        "rolled-back",
        "switched-back",
        "paused-by-control",
        "paused-by-plan",
        "awaiting-promotion",
        "still-paused",
        "promote-requested",
        "failed",
        "normal-event",
        "other-warning",
        "started-and-paused",
        "failed-and-rolled-back",
    ],
)
def test_notifications_of_a_change(
    before: RayServiceStatuses,
    after: RayServiceStatuses,
    events: list[RayServiceEvent],
    expected: list[NotifyEvent],
) -> None:
    assert [moment.event for moment in rayservice_notifications(before, after, events)] == expected


def test_details_name_the_clusters_and_the_traffic() -> None:
    [step] = rayservice_notifications(
        status(active="a", pending="b", traffic=0), status(active="a", pending="b", traffic=25), []
    )
    assert step.details == {"activeCluster": "a", "pendingCluster": "b", "trafficPercent": 25}
    assert step.message == "25% of the traffic goes to RayCluster b."
    [failed] = rayservice_notifications(status(active="a"), status(active="a"), [FAILED_GATE])
    assert (failed.message, failed.details) == (FAILED_GATE.message, {"reason": "AnalysisFailed"})
