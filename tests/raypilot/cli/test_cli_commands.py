"""`raypilot` end to end for RayJobs and RayServices: the CLI in-process against the Temporal dev server and a
worker with the real workflows and activities, on the real stack with simulated Ray."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from sandbox.testing import wait_until
from tests.raypilot.cli.conftest import CliStack
from tests.readiness import with_quick_readiness

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = json.loads((Path(__file__).parents[3] / "examples" / "rayjob.json").read_text())


def rayjob(namespace: str, name: str, entrypoint: str, **spec: Any) -> dict[str, Any]:
    """examples/rayjob.json with the tests' quick readiness probes (tests/readiness.py)."""
    manifest = copy.deepcopy(EXAMPLE)
    with_quick_readiness(manifest["spec"]["rayClusterSpec"])
    manifest["metadata"] = {"name": name, "namespace": namespace}
    manifest["spec"].update(entrypoint=entrypoint, **spec)
    return manifest


def test_console_script_is_installed_and_lists_the_commands() -> None:
    script = Path(sys.executable).parent / "raypilot"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for command in ("apply", "status", "delete", "upgrade", "worker", "sandbox", "demo"):
        assert command in done.stdout


def test_sandbox_help_is_the_sandbox_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    from raypilot.cli.main import main

    assert main(["sandbox", "--help"]) == 0
    assert "{up,down" in capsys.readouterr().out


async def test_rejected_input_exits_2_and_starts_nothing(cli_stack: CliStack) -> None:
    name = "n" * 48  # one more than KubeRay allows a RayJob (the cluster suffix needs room)
    manifest = rayjob("default", name, "true")
    result = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert result.code == 2
    assert "RayJob name should be no more than 47 characters" in result.stderr
    assert result.stdout == ""
    with pytest.raises(RPCError) as raised:
        await cli_stack.client.get_workflow_handle(f"rayjob/default/{name}").describe()
    assert raised.value.status == RPCStatusCode.NOT_FOUND

    unknown = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "x"}, "spec": {"bogus": 1}}
    unknown_field = await cli_stack.run("apply", "-f", "-", stdin=json.dumps(unknown))
    assert (unknown_field.code, unknown_field.stderr.strip()) == (2, 'error: unknown field "spec.bogus"')

    missing_file = await cli_stack.run("apply", "-f", "/nonexistent/manifest.yaml")
    assert missing_file.code == 2
    malformed_ref = await cli_stack.run("status", "rayjob/default")
    assert (malformed_ref.code, "expected KIND/NAMESPACE/NAME" in malformed_ref.stderr) == (2, True)
    bad_kind = await cli_stack.run("delete", "raycluster/default/x")
    assert bad_kind.code == 2
    not_a_service = await cli_stack.run("upgrade", "pause", "rayjob/default/x")
    assert not_a_service.code == 2
    orphaned_job = await cli_stack.run("delete", "rayjob/default/x", "--cascade=orphan")
    assert orphaned_job.code == 2
    assert "--cascade=orphan lets go of a RayService's clusters" in orphaned_job.stderr


async def test_unknown_workflow_is_a_failure_naming_it(cli_stack: CliStack) -> None:
    for argv in (("status", "rayjob/default/nobody"), ("upgrade", "abort", "rayservice/default/nobody")):
        result = await cli_stack.run(*argv)
        assert result.code == 1, argv
        assert "no ray" in result.stderr
        assert "default/nobody" in result.stderr
    missing = await cli_stack.run("status", "rayjob/default/nobody")
    assert missing.stderr.strip() == "error: no rayjob default/nobody"


async def test_apply_reapply_status_and_watch_until_the_job_completes(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    manifest_file = tmp_path / "job.yaml"
    manifest_file.write_text(
        yaml.safe_dump(rayjob(namespace, "watched", "sleep 3", activeDeadlineSeconds=120))
    )
    ref = f"rayjob/{namespace}/watched"

    started = await cli_stack.run("apply", "-f", str(manifest_file))
    assert started.code == 0, started.stderr
    assert started.stdout.startswith(f"{ref} started")
    handle = cli_stack.client.get_workflow_handle(ref)
    attributes = (await handle.describe()).typed_search_attributes
    assert {pair.key.name: pair.value for pair in attributes}.items() >= {
        "RayKind": "RayJob", "RayNamespace": namespace, "RayName": "watched"
    }.items()  # fmt: skip

    again = await cli_stack.run("apply", "-f", str(manifest_file))
    assert again.code == 0, again.stderr
    assert again.stdout.strip() == f"{ref} applied, generation 1"

    as_json = await cli_stack.run("status", ref, "-o", "json")
    assert as_json.code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["jobDeploymentStatus"] in ("", "Initializing", "Running")
    human = await cli_stack.run("status", ref)
    assert human.code == 0
    assert human.stdout.startswith(f"{ref}  ")

    watched = await cli_stack.run("status", ref, "--watch")
    assert watched.code == 0, watched.stderr
    views = watched.stdout.split("--- ")[1:]
    assert len(views) >= 2, watched.stdout  # at least one live view before the final one
    final = views[-1]
    assert f"{ref}  Complete  (workflow completed)" in final
    assert "job status   SUCCEEDED" in final
    assert "timeline:" in final
    assert "deadline" in "".join(views)  # the run-time bar against activeDeadlineSeconds
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED

    after = await cli_stack.run("status", ref, "-o", "json")
    assert json.loads(after.stdout)["jobStatus"] == "SUCCEEDED"
    assert "(workflow completed)" in (await cli_stack.run("status", ref)).stdout
    # Watching what has already completed: the final view at once; on a terminal, drawn on a cleared screen.
    on_terminal = await cli_stack.run("status", ref, "--watch", terminal=True)
    assert on_terminal.code == 0
    assert on_terminal.stdout.startswith(f"\x1b[H\x1b[2J{ref}  Complete  (workflow completed)")
    as_lines = await cli_stack.run("status", ref, "--watch", "-o", "json")
    assert [json.loads(line)["jobDeploymentStatus"] for line in as_lines.stdout.splitlines()] == ["Complete"]


async def test_delete_a_running_job(cli_stack: CliStack) -> None:
    namespace = cli_stack.namespace()
    ref = f"rayjob/{namespace}/doomed"
    manifest = rayjob(namespace, "doomed", "sleep 600", managedBy="ray.io/kuberay-operator")
    applied = await cli_stack.run("apply", "-f", "-", stdin=json.dumps(manifest))
    assert applied.code == 0, applied.stderr

    async def running() -> bool | None:
        status = json.loads((await cli_stack.run("status", ref, "-o", "json")).stdout)
        return True if status.get("jobStatus") == "RUNNING" else None

    await wait_until(running, within=60, interval=0.5, what="the Ray job running")
    assert cli_stack.owned("rayclusters", namespace, "RayJob", "doomed")

    # Valid on its own, so only the workflow's update validator can reject it (KubeRay's CEL transition rule).
    manifest["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    changed = await cli_stack.run("apply", "-f", "-", stdin=json.dumps(manifest))
    assert (changed.code, changed.stderr.strip()) == (2, "error: the managedBy field is immutable")

    deleted = await cli_stack.run("delete", ref)
    assert deleted.code == 0, deleted.stderr
    assert deleted.stdout.strip() == f"{ref} deleted"
    assert (
        await cli_stack.client.get_workflow_handle(ref).describe()
    ).status == WorkflowExecutionStatus.COMPLETED
    await wait_until(
        lambda: not cli_stack.owned("rayclusters", namespace, "RayJob", "doomed") or None,
        within=30,
        what="the RayCluster gone",
    )


async def test_delete_what_a_finished_job_left_by_its_labels(cli_stack: CliStack) -> None:
    namespace = cli_stack.namespace()
    ref = f"rayjob/{namespace}/leftover"
    # No shutdownAfterJobFinishes: the workflow completes and leaves its RayCluster running, as KubeRay does.
    manifest = rayjob(namespace, "leftover", "true", shutdownAfterJobFinishes=False)
    assert (await cli_stack.run("apply", "-f", "-", stdin=json.dumps(manifest))).code == 0
    await cli_stack.client.get_workflow_handle(ref).result()
    clusters = cli_stack.owned("rayclusters", namespace, "RayJob", "leftover")
    assert len(clusters) == 1

    # The finished RayJob is deleted as `kubectl delete` deletes it: what it left, and its completed run.
    deleted = await cli_stack.run("delete", ref)
    assert deleted.code == 0, deleted.stderr
    assert f"{ref} deleted (its finished run " in deleted.stdout
    left = deleted.stdout.split("deleted what was left: ")[1].strip().rstrip(")").split(", ")
    assert set(left) == {"Service/leftover-head-svc", f"RayCluster/{clusters[0]}"}
    await wait_until(
        lambda: not cli_stack.owned("rayclusters", namespace, "RayJob", "leftover") or None,
        within=30,
        what="the RayCluster gone",
    )
    gone = await cli_stack.run("delete", ref)
    assert (gone.code, gone.stderr.strip()) == (1, f"error: no rayjob {namespace}/leftover")
    never_existed = await cli_stack.run("delete", f"rayjob/{namespace}/never")
    assert (never_existed.code, never_existed.stderr.strip()) == (1, f"error: no rayjob {namespace}/never")


async def test_rayservice_status_rejected_upgrade_control_and_delete(cli_stack: CliStack) -> None:
    namespace = cli_stack.namespace()
    manifest = yaml.safe_load(
        (Path(__file__).parents[3] / "examples" / "rayservice-newcluster.yaml").read_text()
    )
    manifest["metadata"] = {"name": "svc", "namespace": namespace}
    ref = f"rayservice/{namespace}/svc"
    started = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert started.code == 0, started.stderr
    assert started.stdout.startswith(f"{ref} started")

    async def running() -> str | None:
        view = await cli_stack.run("status", ref)
        return view.stdout if view.stdout.startswith(f"{ref}  Running") else None

    view = await wait_until(running, within=60, interval=0.5, what="the RayService running")
    assert "  active   svc-" in view
    assert "app versioned: RUNNING" in view

    for control in ("pause", "resume", "promote", "abort"):
        rejected = await cli_stack.run("upgrade", control, ref)
        assert rejected.code == 2, (control, rejected.stdout)
        assert (
            f"{control} rejected: no upgrade is in progress for RayService {namespace}/svc" in rejected.stderr
        )
    # `rollout` finds the running RayService as `upgrade` does: a query answered, an update rejected.
    history = await cli_stack.run("rollout", "history", ref)
    assert history.code == 0, history.stderr
    assert [line.split()[:2] for line in history.stdout.splitlines()] == [
        ["REVISION", "OUTCOME"],
        ["1", "Promoted"],
    ]
    undo = await cli_stack.run("rollout", "undo", ref)
    assert (undo.code, undo.stderr.strip()) == (
        2,
        f"error: undo rejected: RayService {namespace}/svc has no earlier promoted revision to go back to "
        "(revisions kept: 1)",
    )

    clusters = cli_stack.owned("rayclusters", namespace, "RayService", "svc")
    assert len(clusters) == 1
    deleted = await cli_stack.run("delete", ref)
    assert deleted.code == 0, deleted.stderr
    assert deleted.stdout.strip() == f"{ref} deleted"
    assert not cli_stack.owned("rayclusters", namespace, "RayService", "svc")  # the workflow waited for it


async def test_delete_with_cascade_orphan_lets_the_rayservice_go_and_keeps_what_it_made(
    cli_stack: CliStack,
) -> None:
    namespace = cli_stack.namespace()
    manifest = yaml.safe_load(
        (Path(__file__).parents[3] / "examples" / "rayservice-newcluster.yaml").read_text()
    )
    manifest["metadata"] = {"name": "kept", "namespace": namespace}
    ref = f"rayservice/{namespace}/kept"
    assert (await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))).code == 0

    async def running() -> str | None:
        view = await cli_stack.run("status", ref)
        return view.stdout if view.stdout.startswith(f"{ref}  Running") else None

    await wait_until(running, within=60, interval=0.5, what="the RayService running")
    clusters = cli_stack.owned("rayclusters", namespace, "RayService", "kept")
    let_go = await cli_stack.run("delete", ref, "--cascade=orphan")
    assert let_go.code == 0, let_go.stderr
    assert let_go.stdout.strip() == (
        f"{ref} let go: its RayClusters and Services stay, no longer managed by raypilot"
    )
    description = await cli_stack.client.get_workflow_handle(ref).describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert cli_stack.owned("rayclusters", namespace, "RayService", "kept") == clusters
    again = await cli_stack.run("delete", ref, "--cascade=orphan")
    assert (again.code, again.stderr.strip()) == (
        1,
        f"error: {ref}: no running workflow to let go of its objects",
    )
    # What was let go is still found by its labels: a plain delete removes it.
    assert (await cli_stack.run("delete", ref)).code == 0
    assert not cli_stack.owned("rayclusters", namespace, "RayService", "kept")
