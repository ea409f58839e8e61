"""Sandboxes for the controller tests: one per module, running on a background thread so that tests can use
the blocking official `kubernetes` client (and kubectl) against it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.ray.simulated_timings import SimulationTimings
from sandbox.testing import SandboxThread


@pytest.fixture(scope="module")
def sandbox_simulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxThread]:
    with SandboxThread(
        tmp_path_factory.mktemp("sandbox-simulated"),
        "simulated",
        simulated_options={"timings": SimulationTimings.fast()},
        job_backoff_base_s=0.1,
        job_backoff_cap_s=0.5,
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def sandbox_real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxThread]:
    with SandboxThread(
        tmp_path_factory.mktemp("sandbox-real"), "real", job_backoff_base_s=0.2, job_backoff_cap_s=1.0
    ) as cluster:
        yield cluster
