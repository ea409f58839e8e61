"""The reliability suite's shared installation: the test process's real stack (kube-apiserver, KubeRay's
operator, pods of simulated Ray) and one in-process worker on the session's dev server for the whole
package, reaching the API server as raypilot's ServiceAccount through a fault proxy (its token is what the
secret scan looks for, with the Ray tokens), every log record of the run, and every workflow history the
suite produces."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config
from temporalio.testing import WorkflowEnvironment

from sandbox.faults import FaultRule
from sandbox.realkube.faultproxy import FaultProxy
from tests.integration.stack import Stack, kubeconfig_worker
from tests.kubes import RealKube
from tests.reliability.figures import FIGURES, FULL, RESULTS_FILE, SEED, append_results, table
from tests.reliability.ledger import Ledger


def pytest_report_header() -> str:
    return f"reliability suite: {'full' if FULL else 'small'} runs, seed {SEED}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES:
        return
    terminalreporter.write_sep("=", "reliability figures")
    terminalreporter.write_line(table())
    if RESULTS_FILE:
        append_results(Path(RESULTS_FILE))
        terminalreporter.write_line(f"appended to {RESULTS_FILE}")


class _Everything(logging.Handler):
    def __init__(self, ledger: Ledger) -> None:
        super().__init__(logging.DEBUG)
        self.ledger = ledger

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format still counts as text
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            text += " " + repr(record.exc_info[1])
        self.ledger.logs.append(text)


@pytest.fixture(scope="package")
def ledger() -> Iterator[Ledger]:
    """Every history and log line of the package, for the secret scan (test_s6_secrets runs last)."""
    recorded = Ledger()
    handler = _Everything(recorded)
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield recorded
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


@dataclass(frozen=True)
class WorkerApi:
    """How the package's worker reaches the real API server: as raypilot's ServiceAccount (deploy/'s RBAC)
    through a fault proxy whose rules the tests set. The tests' own reads go to the API server directly,
    as its admin, so the faults they inject never disturb their checks."""

    proxy: FaultProxy
    kubeconfig: Path

    def set_faults(self, rules: list[FaultRule], seed: int | None = None) -> None:
        self.proxy.on_loop(lambda proxy: proxy.faults.set_rules(rules, seed=seed))

    def clear_faults(self) -> None:
        self.proxy.on_loop(lambda proxy: proxy.faults.clear())

    def fault_rules(self) -> list[dict[str, Any]]:
        """The rules as JSON, each with how often it has injected its fault."""
        rules: list[dict[str, Any]] = self.proxy.on_loop(lambda proxy: proxy.faults.to_json()["rules"])
        return rules

    @property
    def token(self) -> str:
        """The ServiceAccount's bearer token: it must never leave the worker (S6)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        return str(config["users"][0]["user"]["token"])


@pytest.fixture(scope="package")
def worker_api(
    real_kube_of_simulated_ray: RealKube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WorkerApi]:
    with real_kube_of_simulated_ray.worker_through_faults(tmp_path_factory.mktemp("reliability")) as faulty:
        yield WorkerApi(*faulty)


@pytest.fixture(scope="package")
async def reliability_stack(
    dev_server_env: WorkflowEnvironment,
    real_kube_of_simulated_ray: RealKube,
    worker_api: WorkerApi,
    ledger: Ledger,
) -> AsyncIterator[Stack]:
    """The real stack with simulated Ray, and a worker of the package as raypilot's ServiceAccount through
    `worker_api`'s fault proxy; the Stack's API client is the admin's, straight to the API server."""
    ledger.secrets.add(worker_api.token)
    api_client = config.new_client_from_config(config_file=str(real_kube_of_simulated_ray.admin))
    try:
        async with kubeconfig_worker(dev_server_env.client, worker_api.kubeconfig) as task_queue:
            yield Stack(dev_server_env.client, task_queue, api_client)
    finally:
        worker_api.clear_faults()
        api_client.close()


@pytest.fixture(autouse=True)
def no_fault_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The package shares one fault proxy: whatever faults a test injected are cleared when it ends, also when
    it failed or timed out before clearing them itself, so the next test starts on a sound API."""
    yield
    if "worker_api" in request.fixturenames:
        api: WorkerApi = request.getfixturevalue("worker_api")
        api.clear_faults()
