"""The reliability suite's shared installation: one simulated sandbox and one in-process worker on the
session's dev server for the whole package, a kubeconfig that carries credentials (so the secret scan has
something to look for), every log record of the run, and every workflow history the suite produces."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml
from temporalio.testing import WorkflowEnvironment

from tests.integration.stack import Stack, running_sandbox_thread
from tests.reliability.figures import FIGURES, FULL, RESULTS_FILE, SEED, append_results, table
from tests.reliability.ledger import KUBECONFIG_TOKEN, Ledger, secret_worker


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


@pytest.fixture(scope="package")
async def reliability_stack(
    dev_server_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory, ledger: Ledger
) -> AsyncIterator[Stack]:
    """A simulated sandbox and a worker whose kubeconfig holds a bearer token (the sandbox ignores it)."""
    workdir = tmp_path_factory.mktemp("reliability")
    async with running_sandbox_thread(workdir / "sandbox", "simulated") as cluster:
        kubeconfig = yaml.safe_load(cluster.kubeconfig_path.read_text())
        kubeconfig["users"][0]["user"] = {"token": KUBECONFIG_TOKEN}
        with_token = workdir / "kubeconfig"
        with_token.write_text(yaml.safe_dump(kubeconfig))
        api_client = cluster.api_client()
        try:
            async with secret_worker(dev_server_env.client, with_token) as task_queue:
                yield Stack(cluster, dev_server_env.client, task_queue, api_client)
        finally:
            cluster.sandbox.faults.clear()
            api_client.close()


@pytest.fixture(autouse=True)
def no_fault_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The package shares one sandbox: whatever faults a test injected are cleared when it ends, also when it
    failed or timed out before clearing them itself, so the next test starts on a sound API and dashboard."""
    yield
    if "reliability_stack" in request.fixturenames:
        stack: Stack = request.getfixturevalue("reliability_stack")
        stack.cluster.sandbox.faults.clear()
