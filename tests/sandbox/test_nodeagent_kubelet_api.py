"""The node agent's HTTPS API (sandbox/nodeagent/kubelet_api.py) on its own: what it answers for a container's
log, and to whom. (`kubectl logs` through the real API server: tests/realkube/test_node_agent.py.)"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from sandbox.nodeagent.kubelet_api import ContainerLog, NodeApi, tail
from sandbox.realkube.certs import ControlPlaneCerts, make_control_plane_certs


@pytest.mark.parametrize(
    ("data", "lines", "expected"),
    [
        (b"a\nb\nc\n", None, b"a\nb\nc\n"),
        (b"a\nb\nc\n", 2, b"b\nc\n"),
        (b"a\nb\nc", 1, b"c"),  # a last line still being written counts
        (b"a\nb\n", 5, b"a\nb\n"),
        (b"a\nb\n", 0, b""),
        (b"", 3, b""),
    ],
)
def test_tail_keeps_the_last_lines(data: bytes, lines: int | None, expected: bytes) -> None:
    assert tail(data, lines) == expected


class Logs:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "main.log"
        self.path.write_bytes(b"one\ntwo\nthree\n")
        self.running = False

    def container_log(self, namespace: str, pod: str, container: str, previous: bool) -> ContainerLog | str:
        if (namespace, pod, container, previous) != ("default", "p", "main", False):
            return f'container "{container}" in pod "{pod}" is waiting to start'
        return ContainerLog(self.path, lambda: self.running)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def certs(tmp_path: Path) -> ControlPlaneCerts:
    return make_control_plane_certs(tmp_path / "pki", ())


@pytest.fixture
async def served(tmp_path: Path, certs: ControlPlaneCerts) -> AsyncIterator[tuple[str, Logs]]:
    logs = Logs(tmp_path)
    api = NodeApi("127.0.0.1", _free_port(), str(certs.ca_cert), logs)
    await api.start(certs.serving_cert, certs.serving_key)  # valid for 127.0.0.1
    try:
        yield f"https://127.0.0.1:{api.port}/containerLogs/default", logs
    finally:
        await api.stop()


def _client_tls(certs: ControlPlaneCerts, *, with_certificate: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca_cert))
    if with_certificate:
        context.load_cert_chain(str(certs.kubelet_client_cert), str(certs.kubelet_client_key))
    return context


async def _get(url: str, context: ssl.SSLContext) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url, ssl=context) as answer:
        return answer.status, await answer.text()


async def test_a_log_with_its_last_lines_and_a_byte_limit(
    served: tuple[str, Logs], certs: ControlPlaneCerts
) -> None:
    base, _logs = served
    tls = _client_tls(certs)
    assert await _get(f"{base}/p/main", tls) == (200, "one\ntwo\nthree\n")
    assert await _get(f"{base}/p/main?tailLines=2", tls) == (200, "two\nthree\n")
    assert await _get(f"{base}/p/main?tailLines=2&limitBytes=5", tls) == (200, "two\nt")


async def test_what_it_cannot_answer_is_refused_with_the_reason(
    served: tuple[str, Logs], certs: ControlPlaneCerts
) -> None:
    base, _logs = served
    tls = _client_tls(certs)
    status, text = await _get(f"{base}/p/main?timestamps=true", tls)
    assert (status, text) == (400, "timestamps: raypilot's node agent keeps no time per log line\n")
    assert await _get(f"{base}/p/main?tailLines=many", tls) == (400, "tailLines: 'many' is not a number\n")
    waiting = 'container "sidecar" in pod "p" is waiting to start\n'
    assert await _get(f"{base}/p/sidecar", tls) == (400, waiting)


async def test_a_client_without_a_certificate_of_the_cluster_is_not_answered(
    served: tuple[str, Logs], certs: ControlPlaneCerts
) -> None:
    base, _logs = served
    with pytest.raises(aiohttp.ClientError):
        await _get(f"{base}/p/main", _client_tls(certs, with_certificate=False))


async def test_a_follow_sends_what_is_written_and_ends_with_the_container(
    served: tuple[str, Logs], certs: ControlPlaneCerts
) -> None:
    base, logs = served
    logs.running = True
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base}/p/main?follow=true&tailLines=1", ssl=_client_tls(certs)) as answer,
    ):
        assert await answer.content.readline() == b"three\n"
        with logs.path.open("ab") as file:
            file.write(b"four\n")
        assert await asyncio.wait_for(answer.content.readline(), 10) == b"four\n"
        with logs.path.open("ab") as file:
            file.write(b"last\n")  # written just before the container ends
        logs.running = False
        assert await asyncio.wait_for(answer.content.read(), 10) == b"last\n"
