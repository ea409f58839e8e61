"""A GitOps tool's sync loop (Argo CD, Flux: every manifest re-applied every few minutes) through the real
`raypilot` console script (one process per apply), while the RayJobs run and finish: every RayJob runs exactly
once and succeeds, and every apply exits 0 (issue 22).

The default is a small loop (4 manifests, both submission modes, every 3 s for 9 s while they run, then one
sync once all have finished) that `make test` runs; RAYPILOT_GITOPS_FULL=1 runs the issue's size (20 manifests
every 10 s for 3 minutes, then the same last sync):
    RAYPILOT_GITOPS_FULL=1 .venv/bin/pytest tests/raypilot/cli/test_gitops_loop.py -s
The figures (applies, exit statuses, runs, durations) are printed.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import WorkflowFailureError

from tests.raypilot.cli.conftest import CliStack
from tests.readiness import with_quick_readiness

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(600)]

FULL = os.environ.get("RAYPILOT_GITOPS_FULL", "") == "1"
EXAMPLE = json.loads((Path(__file__).parents[3] / "examples" / "rayjob.json").read_text())
RAYPILOT = Path(sys.executable).parent / "raypilot"


@dataclass(frozen=True)
class LoopSize:
    manifests: int
    interval: float
    duration: float


SIZE = LoopSize(20, 10.0, 180.0) if FULL else LoopSize(4, 3.0, 9.0)


def manifest(namespace: str, index: int) -> dict[str, Any]:
    """Half K8sJobMode, half HTTPMode; a short job; the cluster goes a second after the job ends; the tests'
    quick readiness probes (tests/readiness.py)."""
    body = copy.deepcopy(EXAMPLE)
    with_quick_readiness(body["spec"]["rayClusterSpec"])
    body["metadata"] = {"name": f"sync-{index}", "namespace": namespace}
    body["spec"].update(
        entrypoint=f"sleep {2 + index % 3}",
        submissionMode="K8sJobMode" if index % 2 == 0 else "HTTPMode",
        shutdownAfterJobFinishes=True,
        ttlSecondsAfterFinished=1,
    )
    return body


async def apply(path: Path, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(RAYPILOT), "apply", "-f", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    stdout, stderr = await process.communicate()
    return process.returncode if process.returncode is not None else -1, (stdout + stderr).decode()


async def test_reapplying_every_manifest_in_a_loop_runs_each_rayjob_once(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    env = {**cli_stack.env, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    files = []
    for index in range(SIZE.manifests):
        path = tmp_path / f"sync-{index}.yaml"
        path.write_text(yaml.safe_dump(manifest(namespace, index)))
        files.append(path)

    # Each sync applies the manifests one after another, spread over the interval, as a sync loop does.
    started = time.monotonic()
    tasks = []
    rounds = int(SIZE.duration / SIZE.interval)
    for sync in range(rounds):
        for index, path in enumerate(files):
            at = sync * SIZE.interval + index * SIZE.interval / len(files)
            await asyncio.sleep(max(0.0, started + at - time.monotonic()))
            tasks.append(asyncio.ensure_future(apply(path, env)))
    results = await asyncio.gather(*tasks)

    runs: dict[str, int] = {}
    finals = {}
    for index in range(SIZE.manifests):
        workflow_id = f"rayjob/{namespace}/sync-{index}"
        try:
            finals[workflow_id] = await asyncio.wait_for(
                cli_stack.client.get_workflow_handle(workflow_id).result(), 120
            )
        except WorkflowFailureError as error:  # shown in the assertion below
            cause = error.cause
            finals[workflow_id] = {"jobDeploymentStatus": "workflow failed", "jobStatus": repr(cause)}
    # One more sync once every RayJob has finished (the loop outlives them, however slow the machine).
    last_sync = await asyncio.gather(*(apply(path, env) for path in files))
    results += last_sync
    for index in range(SIZE.manifests):
        workflow_id = f"rayjob/{namespace}/sync-{index}"
        executions = [e async for e in cli_stack.client.list_workflows(f"WorkflowId = '{workflow_id}'")]
        runs[workflow_id] = len(executions)

    statuses = collections.Counter(code for code, _ in results)
    # "<ref> started ...", "<ref> applied, ...", "<ref> unchanged: ...": the second word.
    answers = collections.Counter(out.split(" ", 2)[1].rstrip(":,") for code, out in results if code == 0)
    print(
        f"\ngitops loop: {len(results)} applies of {SIZE.manifests} manifests every {SIZE.interval:.0f} s "
        f"for {time.monotonic() - started:.0f} s; exit statuses {dict(statuses)}; answers {dict(answers)}; "
        f"runs {sum(runs.values())}; final {collections.Counter(f['jobStatus'] for f in finals.values())}"
    )
    failures = [output for code, output in results if code != 0]
    unsuccessful = {
        workflow_id: (final.get("reason"), final.get("message"))
        for workflow_id, final in finals.items()
        if final.get("jobStatus") != "SUCCEEDED"
    }
    print(f"failed RayJobs: {unsuccessful}")
    said = collections.Counter(output.strip().splitlines()[-1][:200] for output in failures)
    print(f"failed applies: {dict(said)}")
    outcomes = {(final["jobDeploymentStatus"], final["jobStatus"]) for final in finals.values()}
    assert set(runs.values()) == {1}, runs
    assert outcomes == {("Complete", "SUCCEEDED")}, finals
    assert not failures, failures[:3]
    # Applied again once they had finished: unchanged, with no new run (runs above).
    assert [out.split(" ", 2)[1] for _, out in last_sync] == ["unchanged:"] * SIZE.manifests, last_sync
