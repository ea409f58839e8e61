"""`raypilot logs rayjob/NS/NAME [--follow]` (raypilot/cli/logs_command.py) once the RayJob's status is known:
the live log from its cluster's dashboard (through the API server's proxy: an httpx.MockTransport playing
both), `--follow` until the Ray job ends, and after teardown the log store's copy, else the tail saved in the
status, else a message saying why there is none."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from activities.dependencies import ActivityDependencies
from activities.log_store import DirectoryLogStore
from models.naming import ObjectRef
from raypilot.cli import logs_command
from raypilot.cli.common import Console
from raypilot.cli.logs_command import print_logs
from raypilot.cli.main import main
from raypilot.runs.errors import CommandError
from raypilot.testing.rayjob_scenarios import CLUSTER_SPEC

REF = ObjectRef("RayJob", "default", "sample")
CLUSTER = "sample-abcde"
PROXY = f"/api/v1/namespaces/default/services/{CLUSTER}-head-svc:dashboard/proxy"
STATUS: dict[str, Any] = {
    "jobId": "sample-job1",
    "rayClusterName": CLUSTER,
    "dashboardURL": f"{CLUSTER}-head-svc.default.svc.cluster.local:8265",
    "jobStatus": "RUNNING",
    "jobDeploymentStatus": "Running",
}


class FakeCluster:
    """The API server (the RayCluster, while it exists) and the dashboard behind its proxy: a job whose log
    gains one line per look at its status, until `lines` lines, when it is SUCCEEDED."""

    def __init__(self, *, exists: bool = True, lines: int = 1) -> None:
        self.exists = exists
        self.lines = lines
        self.shown = 1

    def log(self) -> str:
        return "".join(f"line {number}\n" for number in range(1, self.shown + 1))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"/apis/ray.io/v1/namespaces/default/rayclusters/{CLUSTER}":
            if not self.exists:
                return httpx.Response(404, json={"kind": "Status", "reason": "NotFound"})
            return httpx.Response(
                200, json={"metadata": {"name": CLUSTER}, "spec": copy.deepcopy(CLUSTER_SPEC)}
            )
        if path == f"{PROXY}/api/jobs/sample-job1/logs":
            return httpx.Response(200, json={"logs": self.log()})
        if path == f"{PROXY}/api/jobs/sample-job1":
            self.shown = min(self.shown + 1, self.lines)
            status = "SUCCEEDED" if self.shown == self.lines else "RUNNING"
            return httpx.Response(200, json={"status": status, "message": ""})
        return httpx.Response(404, text=f"unexpected {path}")


def dependencies(fake: FakeCluster | None) -> ActivityDependencies:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    return ActivityDependencies(
        env={"RAYPILOT_DASHBOARD_ACCESS": "proxy"},
        kube_configuration=configuration,
        apiserver_transport=httpx.MockTransport(fake if fake is not None else refuse),
    )


def console() -> Console:
    return Console(stdout=io.StringIO(), stderr=io.StringIO(), env={})


def out(shown: Console) -> str:
    return shown.stdout.getvalue()  # type: ignore[attr-defined,no-any-return]


def err(shown: Console) -> str:
    return shown.stderr.getvalue()  # type: ignore[attr-defined,no-any-return]


def torn_down(**condition: str) -> dict[str, Any]:
    """The final status of a RayJob whose cluster was deleted, with a DriverLogSaved condition if given."""
    status = {**STATUS, "jobStatus": "FAILED", "jobDeploymentStatus": "Failed"}
    if condition:
        status["conditions"] = [{"type": "DriverLogSaved", **condition}]
    return status


SAVED_TAIL = {
    "status": "True",
    "reason": "TailSaved",
    "message": "Ray job sample-job1: full log not kept: no log store configured; last lines:\nline 9\nboom",
}


async def test_a_live_job_prints_its_dashboards_log() -> None:
    shown = console()
    fake = FakeCluster(lines=3)
    fake.shown = 3
    code = await print_logs(REF, STATUS, dependencies(fake), None, shown, follow=False)
    assert code == 0
    assert out(shown) == "line 1\nline 2\nline 3\n"


async def test_follow_prints_each_new_line_once_until_the_job_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs_command, "FOLLOW_SECONDS", 0.001)
    shown = console()
    code = await print_logs(REF, STATUS, dependencies(FakeCluster(lines=5)), None, shown, follow=True)
    assert code == 0
    assert out(shown) == "".join(f"line {number}\n" for number in range(1, 6))


async def test_after_teardown_the_log_stores_copy_is_printed(tmp_path: Path) -> None:
    store = DirectoryLogStore(tmp_path)
    await store.put("default/sample/sample-job1.log", b"the whole log\nTraceback: boom\n")
    shown = console()
    fake = FakeCluster(exists=False)
    code = await print_logs(REF, torn_down(**SAVED_TAIL), dependencies(fake), store, shown, follow=True)
    assert code == 0
    assert out(shown) == "the whole log\nTraceback: boom\n"
    assert "its RayCluster is gone; the log kept at file://" in err(shown)


async def test_after_teardown_without_a_store_the_saved_tail_is_printed(tmp_path: Path) -> None:
    shown = console()
    code = await print_logs(
        REF, torn_down(**SAVED_TAIL), dependencies(FakeCluster(exists=False)), None, shown, follow=False
    )
    assert code == 0
    assert out(shown) == "line 9\nboom\n"
    assert "full log not kept: no log store configured" in err(shown)
    # A store that never got this job's log: the tail all the same.
    shown = console()
    store = DirectoryLogStore(tmp_path)
    await print_logs(
        REF, torn_down(**SAVED_TAIL), dependencies(FakeCluster(exists=False)), store, shown, follow=False
    )
    assert out(shown) == "line 9\nboom\n"


async def test_an_unreachable_api_server_still_shows_what_was_saved() -> None:
    shown = console()
    code = await print_logs(REF, torn_down(**SAVED_TAIL), dependencies(None), None, shown, follow=False)
    assert code == 0
    assert out(shown) == "line 9\nboom\n"
    assert "its live log cannot be read" in err(shown)


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (torn_down(), "its RayCluster (and with it the log of Ray job sample-job1) is gone"),
        (torn_down(), "set RAYPILOT_LOG_STORE on the worker and here"),
        (
            torn_down(
                status="False",
                reason="NotSaved",
                message="the driver log of Ray job sample-job1 was not saved: dashboard: HTTP 502",
            ),
            "its RayCluster is gone, and the driver log of Ray job sample-job1 was not saved",
        ),
        ({"jobDeploymentStatus": "Initializing"}, "it has not submitted a Ray job"),
    ],
)
async def test_nothing_kept_says_why(status: dict[str, Any], says: str) -> None:
    with pytest.raises(CommandError) as raised:
        await print_logs(REF, status, dependencies(FakeCluster(exists=False)), None, console(), follow=False)
    assert str(raised.value).startswith("rayjob default/sample: no driver log: ")
    assert says in str(raised.value)


def test_logs_is_for_rayjobs_and_rejects_another_kind() -> None:
    shown = console()
    assert main(["logs", "rayservice/default/serve"], shown) == 2
    assert "logs prints a RayJob's driver log" in err(shown)
    assert main(["logs", "rayjob/default/not a name"], console()) == 2
