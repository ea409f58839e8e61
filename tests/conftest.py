"""Suite-wide pytest configuration. raypilot's own fixtures come from the `raypilot` pytest plugin
(raypilot/testing/plugin.py), the same one users load for their policy tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from raypilot.ast_parsing import serialize_ast_parsing
from sandbox.realkube.install import install_raypilot
from sandbox.realkube.kuberay import DELETION_RULES_GATE
from sandbox.realkube.node import RayKind
from sandbox.realkube.stack import real_cluster, real_stack_unavailable
from tests import stalls
from tests.docs.rbac_scope import LeftToTheAudit
from tests.kubes import SIMULATED_RAY_STACK_ENV, RealKube

# The suite's workers run in this process (CPython 3.11's AST constructor is not thread-safe: see the module).
serialize_ast_parsing()

_STALLS_DIR = os.environ.get("RAYPILOT_TEST_STALLS")
_STALLS = stalls.install(Path(_STALLS_DIR)) if _STALLS_DIR else None


def _real_kube(tmp_path_factory: pytest.TempPathFactory, ray: RayKind) -> Generator[RealKube, None, None]:
    """The real stack with pods of `ray` Ray and raypilot installed, skipped where it cannot run."""
    unavailable = real_stack_unavailable()
    if unavailable:
        pytest.skip(unavailable)
    directory = tmp_path_factory.mktemp(f"real-kube-{ray}-ray")
    # The smoke of the benches beside KubeRay runs on the simulated stack, with their KubeRay gates. On real
    # Ray, DeleteWorkers suspends a RayJob's worker groups, and KubeRay v1.5.0 refuses a RayCluster with a
    # suspended group unless its RayJobDeletionPolicy gate is on (off by default there; on in raypilot).
    with real_cluster(
        directory / "kube", directory / "node", ray=ray, kuberay_feature_gates=DELETION_RULES_GATE
    ) as plane:
        yield RealKube(plane, directory / "node", install_raypilot(plane))


@pytest.fixture(scope="session")
def real_kube_of_simulated_ray(tmp_path_factory: pytest.TempPathFactory) -> Generator[RealKube, None, None]:
    """The real stack with pods of simulated Ray, once per test process (the `kube_stack` fixtures of
    tests/integration and tests/raypilot/cli run on it), or the parent process's (SIMULATED_RAY_STACK_ENV)."""
    described = os.environ.get(SIMULATED_RAY_STACK_ENV)
    if described:
        yield RealKube.described(Path(described))
        return
    yield from _real_kube(tmp_path_factory, "simulated")


@pytest.fixture(scope="session")
def real_kube_of_real_ray(tmp_path_factory: pytest.TempPathFactory) -> Generator[RealKube, None, None]:
    """The real stack with pods of real Ray, once per test process, started when a test first asks for it: the
    real-Ray files of tests/integration and tests/realkube run on it, one after another on one worker
    (REAL_RAY_FILES below)."""
    yield from _real_kube(tmp_path_factory, "real")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if _STALLS is not None:
        _STALLS.test_starts(item.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _STALLS_DIR and not os.environ.get("PYTEST_XDIST_WORKER"):
        terminalreporter.write_sep("-", "garbage collections, stalls and load (tests/stalls.py)")
        terminalreporter.write_line(stalls.summary(Path(_STALLS_DIR)))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # Everything the test modules imported (Ray, Serve, the Kubernetes client) out of later collections.
    stalls.settle_heap()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    # A test file's module fixtures are gone once its last test is torn down: collect its garbage then, so
    # a full collection in the next file scans only the next file's objects (tests/stalls.py).
    result = yield
    if nextitem is None or nextitem.path != item.path:
        if _STALLS is not None:
            _STALLS.file_ends()
        stalls.settle_heap()
    return result


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    # The Temporal SDK's native runtime can abort at interpreter exit (PyGILState_Release while
    # finalizing, exit 134) after every test passed; leave with pytest's own exit code instead.
    code = yield
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code) if isinstance(code, int) else 1)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `--dist loadfile` (`make test` runs pytest-xdist workers) each test file goes whole to one
    worker, so its module fixtures (sandboxes, Ray heads, workers) start once. The reliability package goes
    whole to one worker too: its sandbox and worker are package fixtures, and test_s6_secrets, which runs
    last, scans every history and log line the package's other tests made."""
    if config.getoption("dist", None) != "loadfile":
        return None
    # Files in collection order, not the most numerous tests first: the slow end-to-end directories
    # (integration, raypilot/cli, reliability, sandbox) then start early and the many quick files (wire,
    # workflows) fill in at the end.
    config.option.loadscopereorder = False
    from xdist.scheduler import LoadFileScheduling

    class FilesAndWholePackages(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for package in WHOLE_PACKAGES:
                if nodeid.startswith(package):
                    return package
            if nodeid.split("::")[0] in REAL_RAY_FILES:
                return REAL_RAY_SCOPE
            return str(super()._split_scope(nodeid))

        def _assign_work_unit(self, node: Any) -> None:
            # The real-Ray files, one after another, are the run's longest unit (about 1,100 of its 3,000
            # worker-seconds): begun first (the longest job first), the other worker fills the same time with
            # the rest, and no worker is left alone with them at the end.
            if REAL_RAY_SCOPE in self.workqueue:
                self.workqueue.move_to_end(REAL_RAY_SCOPE, last=False)
            super()._assign_work_unit(node)

    return FilesAndWholePackages(config, log)


# Packages whose tests share package-scoped fixtures or state: one worker runs all of their files.
WHOLE_PACKAGES = ("tests/reliability/",)
REAL_RAY_SCOPE = "real Ray heads"
# The files that start real Ray heads (pytest.mark.ray) run one after another on one worker: two workers each
# with a real head or two on 2 cores starved them (the real-Ray incremental drain check failed in three full
# runs in a row and passed every time alone: its old cluster's deletion outlasted 60 s). The scheduler sees
# node ids only, so the files are listed; `pytest_collection_modifyitems` fails a run whose list has drifted.
REAL_RAY_FILES = frozenset(
    {
        "tests/integration/test_rayjob_real.py",
        "tests/integration/test_rayservice_bluegreen.py",
        "tests/integration/test_rayservice_incremental.py",
        "tests/integration/test_rayservice_rollout_real.py",
        "tests/realkube/test_node_agent.py",
        "tests/sandbox/ray/test_dashboard_contract.py",
        "tests/sandbox/ray/test_head_lifecycle.py",
        "tests/sandbox/ray/test_real_params.py",
    }
)


# The session fixtures of the real stack: a test that asks for one runs on real Kubernetes.
REAL_STACKS = frozenset({"real_kube_of_simulated_ray", "real_kube_of_real_ray"})


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LeftToTheAudit(), "raypilot-left-to-the-rbac-audit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on the process's real stack is marked `realkube` (`make test-fast` leaves those out). A test
    marked `ray` in a file missing from REAL_RAY_FILES would start real heads beside another worker's: stop
    the run, naming the file."""
    for item in items:
        if REAL_STACKS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realkube)
    unlisted = sorted(
        {
            item.nodeid.split("::")[0]
            for item in items
            if item.get_closest_marker("ray") and item.nodeid.split("::")[0] not in REAL_RAY_FILES
        }
    )
    if unlisted:
        raise pytest.UsageError(f"tests marked `ray` outside REAL_RAY_FILES (tests/conftest.py): {unlisted}")
