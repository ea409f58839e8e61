"""The simulated Serve controller on a manual clock: the state sequences observed on Ray 2.60."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from sandbox.ray.simulated_serve_state import (
    SimulatedDeployment,
    SimulatedServeState,
    app_deployment_names,
    import_error,
)
from sandbox.ray.simulated_timings import SimulationTimings

TIMINGS = SimulationTimings(
    tick_s=0.1, app_build_s=1.0, replica_start_s=1.0, replica_stop_s=0.5, replica_update_s=0.2
)
APP = {
    "name": "app1",
    "route_prefix": "/a",
    "import_path": "sandbox.apps.versioned:app",
    "deployments": [{"name": "Versioned", "num_replicas": 4}],
}


class Clock:
    def __init__(self, state: SimulatedServeState) -> None:
        self.now = 0.0
        self.state = state

    def put(self, applications: list[dict[str, Any]], target_capacity: float | None = None) -> None:
        self.state.apply(
            {"applications": applications, "target_capacity": target_capacity}, self.now, self.now
        )

    def run_until(self, condition: Callable[[], bool], limit_s: float = 30.0) -> list[tuple[str, ...]]:
        """Tick until `condition`; returns the distinct replica-state tuples seen on the way."""
        seen: list[tuple[str, ...]] = []
        deadline = self.now + limit_s
        while not condition():
            assert self.now < deadline, "the simulation did not settle"
            self.now += TIMINGS.tick_s
            self.state.tick(self.now, self.now)
            states = tuple(sorted(r.state for d in self._deployments() for r in d.replicas))
            if not seen or seen[-1] != states:
                seen.append(states)
        return seen

    def _deployments(self) -> list[SimulatedDeployment]:
        return [d for app in self.state.apps.values() for d in app.deployments.values()]


@pytest.fixture
def clock() -> Clock:
    return Clock(SimulatedServeState(TIMINGS, head_env={"APP_VERSION": "v1"}))


def versioned(clock: Clock) -> SimulatedDeployment:
    return clock.state.apps["app1"].deployments["Versioned"]


def settled(clock: Clock, status: str = "HEALTHY") -> Callable[[], bool]:
    def check() -> bool:
        app = clock.state.apps.get("app1")
        return app is not None and app.status == "RUNNING" and versioned(clock).status == status

    return check


def ranks(deployment: SimulatedDeployment) -> list[int]:
    return sorted(replica.rank for replica in deployment.replicas)


def test_a_new_app_builds_then_starts_its_capacity_adjusted_replicas(clock: Clock) -> None:
    clock.put([APP], target_capacity=50)
    app = clock.state.apps["app1"]
    assert (app.status, app.route_prefix, app.hide_deployments) == ("DEPLOYING", None, True)
    clock.run_until(lambda: not app.hide_deployments)
    deployment = versioned(clock)
    assert (deployment.status, deployment.trigger, deployment.target) == (
        "UPDATING",
        "CONFIG_UPDATE_STARTED",
        2,
    )
    assert app.route_prefix == "/a"
    clock.run_until(settled(clock))
    assert deployment.trigger == "CONFIG_UPDATE_COMPLETED"
    assert [r.state for r in deployment.replicas] == ["RUNNING", "RUNNING"]
    assert ranks(deployment) == [0, 1]


def test_capacity_changes_scale_up_and_down_keeping_ranks_contiguous(clock: Clock) -> None:
    clock.put([APP], target_capacity=50)
    clock.run_until(settled(clock))
    clock.put([APP], target_capacity=100)
    clock.run_until(lambda: versioned(clock).status == "UPSCALING")
    clock.run_until(settled(clock))
    deployment = versioned(clock)
    assert (deployment.trigger, deployment.target, ranks(deployment)) == (
        "UPSCALE_COMPLETED",
        4,
        [0, 1, 2, 3],
    )
    survivors = {r.replica_id for r in deployment.replicas if r.rank < 2}

    clock.put([APP], target_capacity=50)
    clock.run_until(lambda: versioned(clock).status == "DOWNSCALING")
    clock.run_until(settled(clock))
    assert deployment.trigger == "DOWNSCALE_COMPLETED"
    assert {r.replica_id for r in deployment.replicas} == survivors  # the highest ranks were stopped
    assert ranks(deployment) == [0, 1]

    clock.put([APP], target_capacity=75)
    clock.run_until(settled(clock))
    assert ranks(deployment) == [0, 1, 2]  # the released rank 2 is reused


def test_a_user_config_change_reconfigures_replicas_in_place(clock: Clock) -> None:
    clock.put([APP])
    clock.run_until(settled(clock))
    before = {r.replica_id for r in versioned(clock).replicas}
    changed = copy.deepcopy(APP)
    changed["deployments"][0]["user_config"] = {"version": "v2"}
    clock.put([changed])
    seen = clock.run_until(settled(clock))
    deployment = versioned(clock)
    assert any("UPDATING" in states for states in seen)
    assert {r.replica_id for r in deployment.replicas} == before
    assert {r.answer_version for r in deployment.replicas} == {"v2"}
    assert deployment.trigger == "CONFIG_UPDATE_COMPLETED"


def test_a_code_change_rolls_replicas_over_without_an_outage(clock: Clock) -> None:
    clock.put([APP])
    clock.run_until(settled(clock))
    before = {r.replica_id for r in versioned(clock).replicas}
    changed = {**APP, "runtime_env": {"env_vars": {"APP_VERSION": "v3"}}}
    clock.put([changed])
    app = clock.state.apps["app1"]
    assert app.hide_deployments  # re-importing: Serve lists no deployments meanwhile
    seen = clock.run_until(settled(clock))
    deployment = versioned(clock)
    assert not before & {r.replica_id for r in deployment.replicas}
    assert {r.answer_version for r in deployment.replicas} == {"v3"}
    assert all(states.count("RUNNING") + states.count("UPDATING") >= 3 for states in seen)
    assert any("STOPPING" in states and "STARTING" in states for states in seen)
    assert ranks(deployment) == [0, 1, 2, 3]


def test_an_unimportable_app_fails_every_time_it_is_deployed(clock: Clock) -> None:
    bad = {"name": "bad", "route_prefix": "/b", "import_path": "nonexistent.module:app"}
    clock.put([bad])
    clock.run_until(lambda: clock.state.apps["bad"].status == "DEPLOY_FAILED")
    app = clock.state.apps["bad"]
    assert app.route_prefix is None
    assert app.deployments == {}
    assert "ModuleNotFoundError: No module named 'nonexistent'" in app.message
    clock.put([bad])
    assert app.status == "DEPLOYING"
    clock.run_until(lambda: app.status == "DEPLOY_FAILED")


def test_apps_left_out_of_a_put_are_deleted(clock: Clock) -> None:
    clock.put([APP])
    clock.run_until(settled(clock))
    clock.put([])
    app = clock.state.apps["app1"]
    assert app.status == "DELETING"
    seen = clock.run_until(lambda: "app1" not in clock.state.apps)
    assert ("STOPPING",) * 4 in seen or any(set(states) == {"STOPPING"} for states in seen)


def test_autoscaling_bounds_follow_target_capacity(clock: Clock) -> None:
    # Verified live on Ray 2.60: {min 3, initial 5, max 10} at tc 30 -> 3; the same app at tc 100 -> 5.
    autoscaling = {
        "name": "app1",
        "route_prefix": "/a",
        "import_path": "sandbox.apps.versioned:app",
        "deployments": [
            {
                "name": "Versioned",
                "autoscaling_config": {"min_replicas": 3, "initial_replicas": 5, "max_replicas": 10},
            }
        ],
    }
    clock.put([autoscaling], target_capacity=30)
    clock.run_until(settled(clock))
    assert versioned(clock).target == 3
    clock.put([autoscaling], target_capacity=100)
    clock.run_until(lambda: versioned(clock).status == "UPSCALING")
    clock.run_until(settled(clock))
    assert (versioned(clock).target, versioned(clock).trigger) == (5, "UPSCALE_COMPLETED")


@pytest.mark.parametrize(
    ("import_path", "runtime_env", "expected"),
    [
        ("sandbox.apps.versioned:app", None, None),
        ("sandbox.apps.versioned.app", None, None),
        ("nonexistent.module:app", None, "ModuleNotFoundError: No module named 'nonexistent'"),
        ("sandbox.apps.missing:app", None, "ModuleNotFoundError: No module named 'sandbox.apps.missing'"),
        ("fruit.deployment_graph:app", {"working_dir": "https://example.invalid/x.zip"}, None),
        ("mod:app", {"py_modules": ["s3://bucket/mod.zip"]}, None),
    ],
)
def test_import_error(import_path: str, runtime_env: dict[str, Any] | None, expected: str | None) -> None:
    assert import_error(import_path, runtime_env) == expected


@pytest.mark.parametrize(
    ("app_config", "expected"),
    [
        ({"import_path": "sandbox.apps.versioned:app"}, ["Versioned"]),
        ({"import_path": "sandbox.apps.versioned:app", "deployments": [{"name": "Other"}]}, ["Versioned"]),
        (
            {"import_path": "fruit:graph", "deployments": [{"name": "Mango"}, {"name": "Market"}]},
            ["Mango", "Market"],
        ),
        ({"import_path": "text_ml:app"}, ["app"]),
    ],
)
def test_app_deployment_names(app_config: dict[str, Any], expected: list[str]) -> None:
    assert app_deployment_names(app_config) == expected
