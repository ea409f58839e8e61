"""Integration fixtures: one sandbox + worker per module, on the session's Temporal dev server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.integration.stack import Stack, running_stack


@pytest.fixture(scope="module")
async def simulated_stack(
    dev_server_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path_factory.mktemp("sim"), dev_server_env.client, "simulated") as stack:
        yield stack


@pytest.fixture(scope="module")
async def real_stack(
    dev_server_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path_factory.mktemp("real"), dev_server_env.client, "real") as stack:
        yield stack
