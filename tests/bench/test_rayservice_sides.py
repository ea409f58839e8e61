"""What P6 reads of KubeRay's operator and of its load's clients: the feature gates its command line turns
on, and how the clients split by kind."""

from __future__ import annotations

import pytest

from bench.rayservice_sides import enabled_gates
from bench.upgrades import Clients


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["/kuberay-operator", "--enable-leader-election=false"], set()),
        (["/kuberay-operator", "--feature-gates=RayJobDeletionPolicy=true"], {"RayJobDeletionPolicy"}),
        (
            ["op", "--feature-gates=RayJobDeletionPolicy=true,RayServiceIncrementalUpgrade=true"],
            {"RayJobDeletionPolicy", "RayServiceIncrementalUpgrade"},
        ),
        (["op", "--feature-gates=RayServiceIncrementalUpgrade=false"], set()),
        (["op", "--feature-gates= RayServiceIncrementalUpgrade = True "], {"RayServiceIncrementalUpgrade"}),
        (["op", "--metrics-addr=RayServiceIncrementalUpgrade=true"], set()),
    ],
)
def test_enabled_gates_are_those_the_flag_sets_true(command: list[str], expected: set[str]) -> None:
    assert enabled_gates(command) == expected


@pytest.mark.parametrize(
    ("clients", "kinds", "text"),
    [
        (Clients(per_request=4), [("one connection per request", 4)], "4 one-connection-per-request clients"),
        (
            Clients(keep_alive=2, per_request=2),
            [("keep-alive", 2), ("one connection per request", 2)],
            "2 keep-alive + 2 one-connection-per-request clients",
        ),
    ],
)
def test_clients_leave_out_a_kind_with_none(
    clients: Clients, kinds: list[tuple[str, int]], text: str
) -> None:
    assert clients.kinds() == kinds
    assert clients.text() == text
