from __future__ import annotations

import re

import pytest

from models.features import GATE_NAMES, FeatureGates, parse_feature_gates


def test_defaults_match_kuberay() -> None:
    gates = FeatureGates()
    assert gates.enabled("RayJobDeletionPolicy")
    assert gates.enabled("RayServiceIncrementalUpgrade")
    assert gates.enabled("RayClusterStatusConditions")
    assert gates.enabled("RayMultiHostIndexing")
    assert not gates.enabled("SidecarSubmitterRestart")
    # The one gate raypilot turns on where KubeRay has it off: RayCronJobs run on Temporal Schedules.
    assert gates.enabled("RayCronJob")


@pytest.mark.parametrize(
    ("text", "expected_changes"),
    [
        ("", {}),
        ("   ", {}),
        ("RayJobDeletionPolicy=false", {"RayJobDeletionPolicy": False}),
        (
            "RayJobDeletionPolicy=false,RayServiceIncrementalUpgrade=false",
            {"RayJobDeletionPolicy": False, "RayServiceIncrementalUpgrade": False},
        ),
        (" SidecarSubmitterRestart = true , ", {"SidecarSubmitterRestart": True}),
        (
            "SidecarSubmitterRestart=1,RayMultiHostIndexing=F",
            {"SidecarSubmitterRestart": True, "RayMultiHostIndexing": False},
        ),
        ("RayClusterStatusConditions=TRUE", {}),
        # the last occurrence wins, as in KubeRay's flag parser
        ("RayCronJob=false,RayCronJob=true", {}),
    ],
)
def test_parse_overrides_only_named_gates(text: str, expected_changes: dict[str, bool]) -> None:
    expected = {**FeatureGates().as_dict(), **expected_changes}
    assert parse_feature_gates(text).as_dict() == expected


@pytest.mark.parametrize(
    ("text", "message_part"),
    [
        ("NoSuchGate=true", "unrecognized feature gate: 'NoSuchGate'"),
        ("RayJobDeletionPolicy", "missing bool value for feature gate 'RayJobDeletionPolicy'"),
        ("RayJobDeletionPolicy=yes", "invalid value of feature gate RayJobDeletionPolicy: 'yes'"),
        ("RayJobDeletionPolicy=", "invalid value of feature gate RayJobDeletionPolicy: ''"),
        ("rayjobdeletionpolicy=true", "unrecognized feature gate"),
    ],
)
def test_parse_rejects_bad_input(text: str, message_part: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message_part)):
        parse_feature_gates(text)


def test_unknown_gate_lookup_is_an_error() -> None:
    with pytest.raises(ValueError, match="unrecognized feature gate"):
        FeatureGates().enabled("AsyncJobInfoQuery")


def test_every_gate_name_round_trips_through_the_parser() -> None:
    for gate in GATE_NAMES:
        flipped = not FeatureGates().enabled(gate)
        assert parse_feature_gates(f"{gate}={str(flipped).lower()}").enabled(gate) is flipped


def test_every_gate_on_enables_each_gate() -> None:
    assert set(FeatureGates.every_gate_on().as_dict().values()) == {True}
