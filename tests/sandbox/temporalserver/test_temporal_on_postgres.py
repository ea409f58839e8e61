"""raypilot on the Temporal server as production runs one (sandbox/temporalserver: `temporal-server` from
`make temporal-server` on a private PostgreSQL cluster, advanced visibility on PostgreSQL): a RayJob applied
as `raypilot apply` does (update-with-start, the search attributes of docs/contract.md §4) runs to Complete on
the real workflows (as worker.py runs them) with the fake world's activities, and the controller's visibility
list finds it by its RayPhase, and Worker Versioning keeps runs on their builds (the dev server's scenario of
tests/raypilot/test_worker_versioning.py, run again here).

Skipped, saying why, unless the server is built (`make temporal-server`; nothing is built at test time) and
PostgreSQL's server is installed (`apt-get install postgresql`)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from models.naming import ObjectRef
from raypilot.converter import raypilot_data_converter
from raypilot.runs.start import update_with_start
from raypilot.testing.rayjob_scenarios import rayjob_manifest, workflow_id
from raypilot.testing.rayjob_world import SUCCEEDS, FakeWorld
from raypilot.testing.worker import running_worker
from sandbox.temporalserver import temporal_on_postgres, temporal_on_postgres_unavailable
from sandbox.testing import wait_until
from tests.raypilot.test_worker_versioning import (
    test_runs_stay_on_their_build_and_a_rayservice_moves_at_continue_as_new as versioning_scenario,
)
from workflows.decisions.rayjob.object import ReusePolicy
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

UNAVAILABLE = temporal_on_postgres_unavailable()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=f"Temporal on PostgreSQL: {UNAVAILABLE}"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
async def postgres_client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    directory = Path(tmp_path_factory.mktemp("temporal-postgres"))
    names = [key.name for key in ALL_SEARCH_ATTRIBUTES]
    async with temporal_on_postgres(directory, search_attributes=names) as server:
        yield await Client.connect(
            server.address, namespace=server.namespace, data_converter=raypilot_data_converter
        )


async def test_an_applied_rayjob_completes_and_is_listed_by_its_phase(postgres_client: Client) -> None:
    world = FakeWorld(job_scripts=[SUCCEEDS])
    name = f"pg-{uuid.uuid4().hex[:6]}"
    manifest = rayjob_manifest(name)
    async with running_worker(postgres_client, activities=world.activities()) as queue:
        applied = await update_with_start(
            postgres_client,
            ObjectRef("RayJob", "default", name),
            manifest,
            ReusePolicy.ALLOW_DUPLICATE,
            queue,
        )
        result = await postgres_client.get_workflow_handle(workflow_id(manifest)).result()
    # The list the controller reads (raypilot/controller/temporal_io.py), by the attributes apply set at
    # start and the phase the workflow upserted; visibility is written after the run, so it is awaited.
    query = f"RayKind = 'RayJob' AND RayName = '{name}' AND RayPhase = 'Complete'"

    async def listed() -> list[str]:
        return [execution.id async for execution in postgres_client.list_workflows(query)]

    found = await wait_until(listed, within=30, interval=0.2, what="the RayJob in the visibility list")
    assert applied == {"generation": 1}
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert found == [workflow_id(manifest)]


async def test_worker_versioning_keeps_runs_on_their_builds(postgres_client: Client) -> None:
    await versioning_scenario(WorkflowEnvironment.from_client(postgres_client))
