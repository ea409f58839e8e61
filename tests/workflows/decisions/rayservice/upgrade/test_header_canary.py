"""headerCanary of raypilot.io/rollout: when the HTTPRoute gets the header rule, what it holds, and when the
pending cluster's first capacity step is taken during a pause (tables)."""

from __future__ import annotations

from typing import Any

import pytest

from models.rollout import HeaderCanary
from tests.workflows.decisions.rayservice.upgrade.pending_support import route, status
from workflows.decisions.rayservice.upgrade.header_canary import (
    header_canary_needs_capacity,
    with_header_canary,
)

CANARY = HeaderCanary(name="x-canary", value="yes")


def test_the_rule_matches_the_header_and_sends_to_the_pending_cluster_only() -> None:
    weighted = route(("old", 100), ("new", 0))
    result = with_header_canary(weighted, status(), "new", CANARY)
    assert result is not None
    first, by_header = result["spec"]["rules"]
    assert first == weighted["spec"]["rules"][0]  # KubeRay's rule stays first: weights are read from it
    assert by_header == {
        "matches": [
            {
                "path": {"type": "PathPrefix", "value": "/"},
                "headers": [{"type": "Exact", "name": "x-canary", "value": "yes"}],
            }
        ],
        "backendRefs": [{"name": "new-serve-svc", "namespace": "ns", "port": 8000, "weight": 1}],
    }
    assert len(weighted["spec"]["rules"]) == 1  # the input is not changed


@pytest.mark.parametrize(
    ("what", "canary", "pending", "rollback", "backends"),
    [
        ("no setting", None, "new", False, (("old", 100), ("new", 0))),
        ("no pending cluster (promoted)", CANARY, "", False, (("new", 100),)),
        ("a rollback runs (abort)", CANARY, "new", True, (("old", 100), ("new", 0))),
        ("the pending backend is not listed yet", CANARY, "new", False, (("old", 100),)),
    ],
)
def test_no_rule(
    what: str,
    canary: HeaderCanary | None,
    pending: str,
    rollback: bool,
    backends: tuple[tuple[str, int], ...],
) -> None:
    weighted = route(*backends)
    assert with_header_canary(weighted, status(pending, rollback=rollback), pending, canary) == weighted, what


@pytest.mark.parametrize(
    ("what", "canary", "state", "needed"),
    [
        ("untouched pending cluster", CANARY, status(), True),
        ("capacity not set yet", CANARY, status(capacity=None, traffic=None), True),
        ("already has capacity", CANARY, status(capacity=50), False),
        ("already has traffic", CANARY, status(capacity=50, traffic=10), False),
        ("rolling back", CANARY, status(rollback=True), False),
        ("no pending cluster", CANARY, status(pending=""), False),
        ("no header canary", None, status(), False),
    ],
)
def test_header_canary_needs_capacity(
    what: str, canary: HeaderCanary | None, state: Any, needed: bool
) -> None:
    assert header_canary_needs_capacity(state, canary) is needed, what


def test_the_header_canary_example_is_valid() -> None:
    from pathlib import Path

    from models.rollout import ANNOTATION_ROLLOUT, rollout_settings

    text = (Path(__file__).parents[5] / "examples" / "rollout" / "header-canary.yaml").read_text()
    settings = rollout_settings({ANNOTATION_ROLLOUT: text})
    assert settings is not None
    assert settings.header_canary == CANARY.model_copy(update={"value": "1"})
    assert settings.revision_history_limit == 5
