"""A RayService whose raypilot.io/ annotation has an unusable value fails its workflow at once, creating
nothing, with a message naming the annotation (a run started with the `temporal` CLI skips raypilot's own
checks, so the workflow's first-run check is that door); an `apply` of one is rejected, changing nothing."""

from __future__ import annotations

import pytest
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.rayservice_annotations import ANNOTATION_IN_PLACE_RESTART, MAX_DRAIN_ANNOTATION
from raypilot.testing.rayservice_scenarios import rayservice_manifest, running_rayservice
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import apply, serving


@pytest.mark.parametrize(
    "annotations",
    [{MAX_DRAIN_ANNOTATION: "10m"}, {ANNOTATION_IN_PLACE_RESTART: "yes"}],
    ids=["drain", "restart"],
)
async def test_an_unusable_annotation_fails_the_run_creating_nothing(
    time_skipping_env: WorkflowEnvironment, annotations: dict[str, str]
) -> None:
    world = FakeRayWorld()
    async with running_rayservice(
        time_skipping_env, world, rayservice_manifest(annotations=annotations)
    ) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.non_retryable) == ("ValidationFailed", True)
    [named] = annotations
    assert f"metadata.annotations[{named}]" in cause.message
    assert world.log == []


async def test_apply_with_an_unusable_annotation_is_rejected(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    async with serving(env, world, rayservice_manifest()) as (handle, _):
        created = list(world.log)
        bad = rayservice_manifest(version="v2", annotations={MAX_DRAIN_ANNOTATION: "soon"})
        with pytest.raises(WorkflowUpdateFailedError) as rejected:
            await apply(handle, bad)
        cause = rejected.value.cause
        assert isinstance(cause, ApplicationError)
        assert MAX_DRAIN_ANNOTATION in cause.message
        assert world.log == created
