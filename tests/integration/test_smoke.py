"""Smoke: a HTTPMode RayJob through the real worker and activities on the real stack (simulated Ray)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(120)]

EXAMPLE = json.loads((Path(__file__).parents[2] / "examples" / "rayjob.json").read_text())


async def test_http_mode_job_completes(kube_stack: Stack) -> None:
    manifest = copy.deepcopy(EXAMPLE)
    manifest["metadata"]["namespace"] = kube_stack.namespace()
    handle = await kube_stack.start(manifest)
    result = await handle.result()
    assert result["jobDeploymentStatus"] == "Complete", result
    assert result["jobStatus"] == "SUCCEEDED"
