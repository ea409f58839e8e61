"""The worker's build for Worker Versioning, from its environment (raypilot/versioning.py)."""

from __future__ import annotations

import pytest
from temporalio.common import VersioningBehavior

from raypilot.settings import SettingsError
from raypilot.versioning import deployment_config_from_env


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"RAYPILOT_DEPLOYMENT_NAME": " ", "RAYPILOT_BUILD_ID": ""}, None),
        ({"RAYPILOT_DEPLOYMENT_NAME": "raypilot", "RAYPILOT_BUILD_ID": "1.0.0"}, ("raypilot", "1.0.0")),
        # As temporal-worker-controller injects them into a version's pods.
        (
            {"TEMPORAL_DEPLOYMENT_NAME": "ops/raypilot", "TEMPORAL_WORKER_BUILD_ID": "5d7f"},
            ("ops/raypilot", "5d7f"),
        ),
        # raypilot's own names win over the controller's.
        (
            {
                "RAYPILOT_BUILD_ID": "mine",
                "TEMPORAL_WORKER_BUILD_ID": "theirs",
                "TEMPORAL_DEPLOYMENT_NAME": "d",
            },
            ("d", "mine"),
        ),
    ],
)
def test_the_build_comes_from_the_environment(env: dict[str, str], expected: tuple[str, str] | None) -> None:
    config = deployment_config_from_env(env)
    if expected is None:
        assert config is None
        return
    assert config is not None
    assert (config.version.deployment_name, config.version.build_id) == expected
    assert config.use_worker_versioning
    assert config.default_versioning_behavior == VersioningBehavior.PINNED


@pytest.mark.parametrize(
    ("env", "missing"),
    [
        ({"RAYPILOT_DEPLOYMENT_NAME": "raypilot"}, "RAYPILOT_BUILD_ID"),
        ({"RAYPILOT_BUILD_ID": "1.0.0"}, "RAYPILOT_DEPLOYMENT_NAME"),
    ],
)
def test_half_a_version_is_refused_with_the_missing_name(env: dict[str, str], missing: str) -> None:
    with pytest.raises(SettingsError, match=f"^{missing} is not set"):
        deployment_config_from_env(env)
