"""S7: Temporal over mutual TLS, and with an API key. The worker (raypilot's connect, as worker.py uses it)
and the CLI reach the dev server through a TLS front on loopback with TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY and
TEMPORAL_TLS_CA; a client certificate of another CA is refused with a clear error. With TEMPORAL_API_KEY they
reach it through a gRPC front on TLS that checks the key (as Temporal Cloud's API-key endpoints do); a wrong
key is refused with a clear error."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from raypilot.cli.common import Console
from raypilot.cli.main import main
from raypilot.settings import TemporalSettings, connect
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.stack import Stack, kubeconfig_worker
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import figure
from tests.reliability.ledger import Ledger
from tests.reliability.tls import Pair, api_key_front, certificate_authority, issued, tls_front

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
    reliability_stack: Stack, worker_api: WorkerApi, front: TlsFront, tmp_path: Path
) -> None:
    recorded = figure("S7", "worker and CLI over mTLS; a stranger's certificate refused")
    stack, task_queue = reliability_stack, "tls-" + tmp_path.name
    env = front.env(front.client, task_queue)
    client = await connect(TemporalSettings.from_env(env))
    namespace = stack.namespace()
    manifest = tmp_path / "rayjob.json"
    manifest.write_text(
        json.dumps(example("rayjob-httpmode", namespace, suspend=True, shutdownAfterJobFinishes=True))
    )
    async with kubeconfig_worker(client, worker_api.kubeconfig, task_queue):
        code, out, err = await raypilot(env, "apply", "-f", str(manifest))
        assert code == 0, err
        target = f"rayjob/{namespace}/rayjob-httpmode"
        code, out, err = await raypilot(env, "status", target, "-o", "json")
        assert code == 0, err
        assert "jobDeploymentStatus" in json.loads(out)
        await raypilot(env, "delete", f"rayjob/{namespace}/rayjob-httpmode")
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


API_KEY = "temporal-api-key-7c1d9e42b05f4a8e"  # the S6 scan looks for it too


async def test_worker_and_cli_work_with_an_api_key(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger, tmp_path: Path
) -> None:
    """TEMPORAL_API_KEY (and TEMPORAL_TLS_CA for the front's own CA; Temporal Cloud's is a public one)
    against a TLS endpoint that refuses a call without the key; a wrong key is refused with a clear error."""
    recorded = figure("S7", "worker and CLI with a Temporal Cloud API key; a wrong key refused")
    ledger.secrets.add(API_KEY)
    stack, task_queue = reliability_stack, "api-key-" + tmp_path.name
    ca = certificate_authority(tmp_path, "ca")
    server = issued(tmp_path, "server", ca, server=True)
    target = stack.client.service_client.config.target_host
    async with api_key_front(target, server, API_KEY) as address:
        env = {
            "TEMPORAL_ADDRESS": address,
            "TEMPORAL_API_KEY": API_KEY,
            "TEMPORAL_TLS_CA": str(ca[0].cert),
            "RAYPILOT_TASK_QUEUE": task_queue,
            "HOME": "/nonexistent",
        }
        client = await connect(TemporalSettings.from_env(env))
        namespace = stack.namespace()
        manifest = tmp_path / "rayjob.json"
        manifest.write_text(
            json.dumps(example("rayjob-httpmode", namespace, rename="keyed", entrypoint="echo hi"))
        )
        target_name = f"rayjob/{namespace}/keyed"
        async with kubeconfig_worker(client, worker_api.kubeconfig, task_queue):
            code, out, err = await raypilot(env, "apply", "-f", str(manifest))
            assert code == 0, err

            async def succeeded() -> bool:
                code, out, err = await raypilot(env, "status", target_name, "-o", "json")
                assert code == 0, err
                return json.loads(out).get("jobStatus") == "SUCCEEDED"

            await wait_until(succeeded, within=60, interval=0.5, what="the RayJob succeeded")
        recorded.tried += 1
        recorded.survived += 1
        await ledger.record(stack.client.get_workflow_handle(f"rayjob/{namespace}/keyed"))

        code, out, err = await raypilot({**env, "TEMPORAL_API_KEY": "wrong-key"}, "status", target_name)
        recorded.tried += 1
        assert code == 1, (code, out, err)
        assert "invalid API key" in err, err
        assert "wrong-key" not in err
        recorded.survived += 1
    # S6 for the key (the S6 module runs before this one): no history, search attribute set or log line of
    # the run so far holds it.
    places = [*ledger.histories.values(), *ledger.search_attributes.values(), *ledger.logs]
    assert not [text for text in places if API_KEY in text or "wrong-key" in text]
    recorded.notes.append(f"the key in 0 of {len(places)} histories, search attribute sets and log lines")
