"""The sandbox Gateway's RequestMirror filter (sandbox/proxy_mirror.py) against real loopback backends: the
share of requests copied, the copies' bodies, and primary responses that neither wait for nor depend on the
mirror backend; and the filter read from an HTTPRoute rule (sandbox/gateway/routes.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

import aiohttp
import pytest
from aiohttp import web

from sandbox.gateway.routes import resolve_route
from sandbox.proxy import ProxyRoute, WeightedBackend, WeightedHttpProxy
from sandbox.proxy_mirror import MirrorBackend, MirrorSampler
from tests.sandbox.network.conftest import Backend, BackendFactory, in_chunks, serve


class MirrorTarget:
    """A mirror backend that counts the copies and keeps their bodies; with `hold`, it answers none of them
    until `release` is set (a mirror that hangs), with `fail` it answers 500."""

    def __init__(self, host: str, *, hold: bool = False, fail: bool = False) -> None:
        self.host, self.port = host, 0
        self.hold, self.fail = hold, fail
        self.bodies: list[bytes] = []
        self.release = asyncio.Event()
        self._count_reached = asyncio.Event()
        self._wanted = 0
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._copy)
        self._runner, self.port = await serve(app, self.host)

    async def stop(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def received(self, count: int) -> None:
        """Waits until `count` copies arrived."""
        self._wanted = count
        if len(self.bodies) >= count:
            return
        self._count_reached.clear()
        await self._count_reached.wait()

    def copying(self, percent: int) -> MirrorBackend:
        """This target as the mirror of `percent` % of the requests."""
        return MirrorBackend(self.host, self.port, percent)

    async def _copy(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        if self._wanted and len(self.bodies) >= self._wanted:
            self._count_reached.set()
        if self.hold:
            await self.release.wait()
        return web.Response(status=500 if self.fail else 200, text="mirror answer, to be discarded")


def mirroring_route(primary: Backend, *mirrors: MirrorBackend) -> ProxyRoute:
    """Every request to `primary`, and its copies to `mirrors`."""
    return ProxyRoute("/", (WeightedBackend(primary.host, primary.port, 1),), (), mirrors)


class MirroredRoute(Protocol):
    async def __call__(
        self, primary: str, host: str, percent: int, *others: MirrorBackend, **behaviour: bool
    ) -> MirrorTarget: ...


@pytest.fixture
async def mirrored(make_backend: BackendFactory, proxy: WeightedHttpProxy) -> AsyncIterator[MirroredRoute]:
    """Routes every request through the proxy to a new backend named `primary`, and copies `percent` % of
    them to a new MirrorTarget at `host` (`hold`, `fail`: its behaviour) and to `others`; the targets stop
    after the test."""
    started: list[MirrorTarget] = []

    async def route(
        primary: str, host: str, percent: int, *others: MirrorBackend, **behaviour: bool
    ) -> MirrorTarget:
        backend = await make_backend(primary)
        target = MirrorTarget(host, **behaviour)
        await target.start()
        started.append(target)
        proxy.set_routes([mirroring_route(backend, target.copying(percent), *others)])
        return target

    yield route
    for target in started:
        await target.stop()


@pytest.mark.parametrize(
    ("percent", "requests", "copied"),
    [(10, 100, 10), (10, 95, 9), (1, 100, 1), (33, 300, 99), (100, 7, 7), (0, 50, 0), (50, 3, 1)],
)
def test_the_sampler_copies_the_exact_share(percent: int, requests: int, copied: int) -> None:
    sampler = MirrorSampler(MirrorBackend("127.0.3.1", 1, percent))
    picks = [sampler.copies() for _ in range(requests)]
    assert sum(picks) == copied
    if percent == 10:  # spread evenly: one in each run of ten
        assert all(sum(picks[start : start + 10]) == 1 for start in range(0, requests - 9, 10))


async def test_ten_percent_of_the_requests_are_copied_and_every_primary_response_is_the_primarys(
    mirrored: MirroredRoute, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    mirror = await mirrored("v1", "127.0.3.250", 10)
    base = f"http://127.0.0.1:{proxy.port}"
    for number in range(200):
        async with http.get(f"{base}/predict?n={number}") as response:
            assert response.status == 200
            assert await response.text() == f"v1 /predict?n={number}"
    await mirror.received(20)
    assert len(mirror.bodies) == 20
    assert (proxy.mirroring.sent, proxy.mirroring.dropped) == (20, 0)


async def test_a_mirrored_body_reaches_both_backends_whole(
    mirrored: MirroredRoute, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    mirror = await mirrored("echo", "127.0.3.251", 100)
    payload = bytes(range(256)) * 4096  # 1 MiB, several chunks
    async with http.post(f"http://127.0.0.1:{proxy.port}/echo", data=in_chunks(payload)) as response:
        assert response.status == 200
        assert await response.read() == payload
    await mirror.received(1)
    assert mirror.bodies == [payload]


async def test_a_hanging_mirror_neither_holds_nor_changes_the_primary_responses(
    mirrored: MirroredRoute, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    hanging = await mirrored("v1", "127.0.3.252", 50, hold=True)
    base = f"http://127.0.0.1:{proxy.port}"
    for number in range(20):
        async with http.post(f"{base}/echo", data=f"body {number}".encode()) as response:
            assert (response.status, await response.text()) == (200, f"body {number}")
    # every primary response came back while the mirror still holds all of its copies unanswered
    await hanging.received(10)
    assert not hanging.release.is_set()
    assert sorted(hanging.bodies) == sorted(f"body {n}".encode() for n in range(1, 20, 2))


async def test_a_failing_or_missing_mirror_changes_nothing_for_the_primary(
    mirrored: MirroredRoute, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    dead = MirrorBackend("127.0.3.254", 1, 100)  # nothing listens there
    failing = await mirrored("v1", "127.0.3.253", 100, dead, fail=True)
    for number in range(5):
        async with http.get(f"http://127.0.0.1:{proxy.port}/x{number}") as response:
            assert (response.status, await response.text()) == (200, f"v1 /x{number}")
    await failing.received(5)


def service(name: str, cluster_ip: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterIP": cluster_ip, "ports": [{"port": 8000, "targetPort": 8000}]},
    }


def test_the_route_rule_s_request_mirror_filter_becomes_the_proxy_route_s_mirror() -> None:
    rule: dict[str, Any] = {
        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
        "backendRefs": [{"name": "a", "port": 8000, "weight": 100}],
    }
    route = {"metadata": {"name": "rt", "namespace": "default"}, "spec": {"rules": [rule]}}
    rule["filters"] = [
        {
            "type": "RequestMirror",
            "requestMirror": {"backendRef": {"name": "m", "port": 8000}, "percent": 10},
        },
        {
            "type": "RequestMirror",
            "requestMirror": {
                "backendRef": {"name": "m", "port": 8000},
                "fraction": {"numerator": 1, "denominator": 4},
            },
        },
        {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "m", "port": 8000}}},
        {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "gone", "port": 8000}}},
    ]
    known = {("default", "a"): service("a", "127.0.1.10"), ("default", "m"): service("m", "127.0.1.11")}
    resolved = resolve_route(route, known, lambda ns, name, port: ("127.0.0.1", 1000 + len(name)))
    [proxy_route] = resolved.proxy_routes
    assert proxy_route.backends == (WeightedBackend("127.0.0.1", 1001, 100),)
    assert proxy_route.mirrors == (
        MirrorBackend("127.0.0.1", 1001, 10),
        MirrorBackend("127.0.0.1", 1001, 25),
        MirrorBackend("127.0.0.1", 1001, 100),  # neither percent nor fraction: every request
    )
    assert [reason for reason, _ in resolved.ref_problems] == ["BackendNotFound"]
