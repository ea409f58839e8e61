"""S7: Temporal over mutual TLS. The worker (raypilot's connect, as worker.py uses it) and the CLI reach the
dev server through a TLS front on loopback with TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and TEMPORAL_TLS_CA; a
client certificate of another CA is refused with a clear error."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from activities.registry import ActivityDependencies, build_activities
from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.settings import TemporalSettings, connect
from raypilot.testing.worker import running_worker
from tests.integration.rayjob_support import example
from tests.integration.stack import Stack
from tests.reliability.figures import figure
from tests.reliability.tls import Pair, certificate_authority, issued, tls_front

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(120)]


@dataclass(frozen=True)
class TlsFront:
    address: str
    ca: Pair
    client: Pair
    stranger: Pair  # a client certificate of another CA

    def env(self, client: Pair, task_queue: str) -> dict[str, str]:
        return {
            "TEMPORAL_ADDRESS": self.address,
            "TEMPORAL_TLS_CERT": str(client.cert),
            "TEMPORAL_TLS_KEY": str(client.key),
            "TEMPORAL_TLS_CA": str(self.ca.cert),
            "RAYPILOT_TASK_QUEUE": task_queue,
            "HOME": "/nonexistent",
        }


@pytest.fixture
async def front(reliability_stack: Stack, tmp_path: Path) -> AsyncIterator[TlsFront]:
    ca = certificate_authority(tmp_path, "ca")
    other = certificate_authority(tmp_path, "other-ca")
    server = issued(tmp_path, "server", ca, server=True)
    target = reliability_stack.client.service_client.config.target_host
    async with tls_front(target, server, ca[0].cert) as address:
        yield TlsFront(
            address, ca[0], issued(tmp_path, "client", ca, server=False), issued(tmp_path, "x", other, False)
        )


async def raypilot(env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    console = Console(stdout=stdout, stderr=stderr, env=env, stdin=io.StringIO(""))
    code = await asyncio.to_thread(main, list(argv), console)
    return code, stdout.getvalue(), stderr.getvalue()


async def test_worker_and_cli_work_over_mutual_tls(
    reliability_stack: Stack, front: TlsFront, tmp_path: Path
) -> None:
    recorded = figure("S7", "worker and CLI over mTLS; a stranger's certificate refused")
    stack, task_queue = reliability_stack, "tls-" + tmp_path.name
    env = front.env(front.client, task_queue)
    client = await connect(TemporalSettings.from_env(env))
    dependencies = ActivityDependencies.from_env(
        {"KUBECONFIG": str(stack.cluster.kubeconfig_path), "RAYPILOT_DASHBOARD_ACCESS": "proxy"}
    )
    namespace = stack.namespace()
    manifest = tmp_path / "rayjob.json"
    manifest.write_text(
        json.dumps(example("rayjob-httpmode", namespace, suspend=True, shutdownAfterJobFinishes=True))
    )
    try:
        async with running_worker(
            client, activities=build_activities(dependencies), task_queue=task_queue, replay_every_task=False
        ):
            code, out, err = await raypilot(env, "apply", "-f", str(manifest))
            assert code == 0, err
            target = f"rayjob/{namespace}/rayjob-httpmode"
            code, out, err = await raypilot(env, "status", target, "-o", "json")
            assert code == 0, err
            assert "jobDeploymentStatus" in json.loads(out)
            await raypilot(env, "delete", f"rayjob/{namespace}/rayjob-httpmode")
    finally:
        await dependencies.aclose()
    recorded.tried += 1
    recorded.survived += 1

    stranger = front.env(front.stranger, task_queue)
    code, out, err = await raypilot(stranger, "status", target)
    recorded.tried += 1
    assert code == 1
    assert "The server closed the TLS connection: check that TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY" in err, (
        err
    )
    recorded.survived += 1
