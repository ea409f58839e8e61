"""The `delete` update's request: deleted by default, let go with the Orphan propagation policy."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.decisions.rayservice.deletion import deletion_request_error, lets_go_of_owned_objects


@pytest.mark.parametrize(
    ("request_body", "lets_go"),
    [
        (None, False),
        ({}, False),
        ({"propagationPolicy": "Background"}, False),
        ({"propagationPolicy": "Foreground"}, False),
        ({"propagationPolicy": "Orphan"}, True),
    ],
)
def test_only_the_orphan_policy_lets_go(request_body: dict[str, Any] | None, lets_go: bool) -> None:
    assert deletion_request_error(request_body) is None
    assert lets_go_of_owned_objects(request_body) is lets_go


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        ("Orphan", 'the delete update takes nothing or {"propagationPolicy": ...}, not str'),
        (
            {"propagationPolicy": "orphan"},
            "propagationPolicy must be one of Background, Foreground, Orphan, not 'orphan'",
        ),
        (
            {"cascade": "orphan", "dryRun": True},
            "unknown field of the delete request: cascade, dryRun (only propagationPolicy is known)",
        ),
    ],
)
def test_a_request_it_does_not_know_is_refused_with_the_reason(request_body: Any, message: str) -> None:
    assert deletion_request_error(request_body) == message
    assert lets_go_of_owned_objects(request_body) is False
