"""A watch whose stream breaks once the API server accepted it (a proxy's or load balancer's timeout, an API
server going away) is made again from the last resourceVersion seen, without a list, as client-go's
reflector does; one cut at once goes back to the caller (its back-off, then a list). The network is an
httpx.MockTransport whose watch streams break where a test says."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities.kubernetes import async_api
from activities.kubernetes.async_api import AsyncApiServer, WatchCut

PATH = "/api/v1/namespaces/ns/pods"


def event(kind: str, version: str) -> bytes:
    obj = {"metadata": {"name": "p", "resourceVersion": version}}
    return (json.dumps({"type": kind, "object": obj}) + "\n").encode()


class CutStream(httpx.AsyncByteStream):
    """The lines, then a broken connection (or a clean end)."""

    def __init__(self, lines: list[bytes], cut: bool) -> None:
        self.lines, self.cut = lines, cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for line in self.lines:
            yield line
        if self.cut:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


class Server:
    """Answers the n-th watch request with the n-th script entry; records every request's query."""

    def __init__(self, script: list[tuple[list[bytes], bool]]) -> None:
        self.script = script
        self.queries: list[dict[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.queries.append(dict(request.url.params))
        lines, cut = self.script[len(self.queries) - 1]
        return httpx.Response(200, stream=CutStream(lines, cut))


def api_server(server: Server) -> AsyncApiServer:
    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    return AsyncApiServer(configuration, httpx.MockTransport(server))


@pytest.fixture
def resume_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(async_api, "RESUMABLE_AFTER_SECONDS", 0.0)


async def take(api: AsyncApiServer, count: int, requests: list[int]) -> list[str]:
    seen: list[str] = []
    watching = api.watch_from(
        PATH, {"labelSelector": "a=b"}, "10", 60, "watch pods", lambda: requests.append(1)
    )
    async for found in watching:
        seen.append(found["object"]["metadata"]["resourceVersion"])
        if len(seen) == count:
            break
    return seen


async def test_a_cut_watch_resumes_from_the_last_version_seen(resume_at_once: None) -> None:
    server = Server(
        [([event("ADDED", "11"), event("MODIFIED", "12")], True), ([event("MODIFIED", "13")], False)]
    )
    requests: list[int] = []
    api = api_server(server)
    try:
        assert await take(api, 3, requests) == ["11", "12", "13"]
    finally:
        await api.aclose()
    assert [q["resourceVersion"] for q in server.queries] == ["10", "12"]
    assert all(q["watch"] == "true" and q["labelSelector"] == "a=b" for q in server.queries)
    assert len(requests) == 2


async def test_a_watch_the_server_ends_is_renewed_from_the_last_version_seen(resume_at_once: None) -> None:
    server = Server([([event("ADDED", "11")], False), ([], False), ([event("DELETED", "14")], False)])
    api = api_server(server)
    try:
        assert await take(api, 2, []) == ["11", "14"]
    finally:
        await api.aclose()
    assert [q["resourceVersion"] for q in server.queries] == ["10", "11", "11"]


async def test_a_watch_cut_at_once_goes_back_to_the_caller() -> None:
    server = Server([([event("ADDED", "11")], True)])
    api = api_server(server)
    try:
        with pytest.raises(WatchCut) as cut:
            await take(api, 2, [])
    finally:
        await api.aclose()
    assert cut.value.streamed_seconds < async_api.RESUMABLE_AFTER_SECONDS
    assert not cut.value.non_retryable
    assert len(server.queries) == 1


async def test_a_watch_refused_before_streaming_is_no_cut() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    api = AsyncApiServer(configuration, httpx.MockTransport(refuse))
    try:
        with pytest.raises(ApplicationError, match="no response") as refused:
            await take(api, 1, [])
    finally:
        await api.aclose()
    assert not isinstance(refused.value, WatchCut)
