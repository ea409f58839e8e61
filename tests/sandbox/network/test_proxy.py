"""The proxy primitives on their own: TcpForwarder and WeightedHttpProxy, against real loopback backends."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator

import aiohttp
import pytest

from sandbox.proxy import (
    ProxyRoute,
    SmoothWeightedPicker,
    TcpForwarder,
    WeightedBackend,
    WeightedHttpProxy,
    path_prefix_matches,
)
from tests.sandbox.network.conftest import in_chunks


@pytest.mark.parametrize(
    ("prefix", "path", "matches"),
    [
        ("/", "/", True),
        ("/", "/anything/at/all", True),
        ("/foo", "/foo", True),
        ("/foo", "/foo/", True),
        ("/foo", "/foo/bar", True),
        ("/foo", "/foobar", False),
        ("/foo/", "/foo", True),
        ("/foo/", "/foo/bar", True),
        ("/foo/bar", "/foo", False),
        ("/foo", "/", False),
    ],
)
def test_path_prefix_matches_whole_path_elements(prefix: str, path: str, matches: bool) -> None:
    assert path_prefix_matches(prefix, path) is matches


@pytest.mark.parametrize(
    ("weights", "picks", "expected"),
    [
        ((80, 20), 100, {0: 80, 1: 20}),
        ((1, 1), 10, {0: 5, 1: 5}),
        ((3, 0, 1), 8, {0: 6, 2: 2}),
        ((0, 0), 5, {}),
        ((1_000, 1), 1_001, {0: 1_000, 1: 1}),
    ],
)
def test_smooth_weighted_picker_gives_each_backend_its_exact_share(
    weights: tuple[int, ...], picks: int, expected: dict[int, int]
) -> None:
    backends = [WeightedBackend("127.0.3.1", 8000 + index, weight) for index, weight in enumerate(weights)]
    picker = SmoothWeightedPicker(backends)
    counts: collections.Counter[int] = collections.Counter()
    for _ in range(picks):
        chosen = picker.pick()
        if chosen is not None:
            counts[chosen.port - 8000] += 1
    assert dict(counts) == expected


def test_smooth_weighted_picker_interleaves_instead_of_bursting() -> None:
    picker = SmoothWeightedPicker([WeightedBackend("a", 1, 1), WeightedBackend("b", 2, 1)])
    assert [picker.pick() for _ in range(4)] == [picker._backends[i] for i in (0, 1, 0, 1)]


# --- TcpForwarder -------------------------------------------------------------------------------------------


@pytest.fixture
async def forwarder_to() -> AsyncIterator[list[TcpForwarder]]:
    forwarders: list[TcpForwarder] = []
    yield forwarders
    for forwarder in forwarders:
        await forwarder.stop()


async def test_forwarder_repoint_keeps_in_flight_stream_and_sends_new_connections_to_new_target(
    make_backend, http: aiohttp.ClientSession, forwarder_to: list[TcpForwarder]
) -> None:
    old, new = await make_backend("old"), await make_backend("new")
    target: list[tuple[str, int]] = [(old.host, old.port)]
    forwarder = TcpForwarder("127.0.0.1", 0, lambda: target[0])
    forwarder_to.append(forwarder)
    await forwarder.start()
    base = f"http://127.0.0.1:{forwarder.port}"

    async with http.get(f"{base}/stream") as streaming:
        first = await streaming.content.readexactly(len(b"old:first;"))
        target[0] = (new.host, new.port)
        # A fresh connection (not a pooled one) must land on the new target.
        async with aiohttp.ClientSession() as fresh, fresh.get(f"{base}/x") as response:
            assert await response.text() == "new /x"
        old.release_stream.set()
        rest = await streaming.read()
    assert first + rest == b"old:first;old:0;old:1;old:2;"


async def test_forwarder_closes_connection_when_there_is_no_target(forwarder_to: list[TcpForwarder]) -> None:
    forwarder = TcpForwarder("127.0.0.1", 0, lambda: None)
    forwarder_to.append(forwarder)
    await forwarder.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", forwarder.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert await _closed_by_peer(reader)
    writer.close()


async def test_forwarder_closes_connection_when_target_refuses(forwarder_to: list[TcpForwarder]) -> None:
    forwarder = TcpForwarder("127.0.0.1", 0, lambda: ("127.0.3.254", 1))
    forwarder_to.append(forwarder)
    await forwarder.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", forwarder.port)
    assert await _closed_by_peer(reader)
    writer.close()


async def _closed_by_peer(reader: asyncio.StreamReader, *, allow_data: bool = False) -> bool:
    """EOF or reset (closing with unread input resets); unless allow_data, with nothing received first."""
    try:
        received = await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        return True
    return allow_data or received == b""


async def test_forwarder_stop_releases_the_port_and_closes_open_connections(make_backend) -> None:
    backend = await make_backend("b")
    forwarder = TcpForwarder("127.0.0.1", 0, lambda: (backend.host, backend.port))
    await forwarder.start()
    port = forwarder.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(backend.stream_started.wait(), 5)
    await forwarder.stop()
    assert forwarder.active_connections == 0
    assert await _closed_by_peer(reader, allow_data=True)
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection("127.0.0.1", port)
    writer.close()
    # The same address can be bound again at once (e.g. a Service recreated with the same clusterIP).
    again = TcpForwarder("127.0.0.1", port, lambda: None)
    await again.start()
    await again.stop()


# --- WeightedHttpProxy --------------------------------------------------------------------------------------


def route(prefix: str, *backends: tuple[object, int]) -> ProxyRoute:
    return ProxyRoute(
        prefix,
        tuple(WeightedBackend(b.host, b.port, weight) for b, weight in backends),  # type: ignore[attr-defined]
    )


async def test_proxy_status_codes_for_unknown_path_no_backend_and_dead_backend(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    backend = await make_backend("b")
    proxy.set_routes(
        [
            route("/api", (backend, 0)),
            ProxyRoute("/dead", (WeightedBackend("127.0.3.254", 1, 1),)),
            route("/live", (backend, 1)),
        ]
    )
    base = f"http://127.0.0.1:{proxy.port}"
    for path, status in [("/other", 404), ("/api/x", 503), ("/dead", 502), ("/live/y?q=1", 200)]:
        async with http.get(base + path) as response:
            assert response.status == status, path
            if status == 200:
                assert await response.text() == "b /live/y?q=1"


async def test_proxy_prefers_the_longest_matching_prefix(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    root, api = await make_backend("root"), await make_backend("api")
    proxy.set_routes([route("/", (root, 1)), route("/api", (api, 1))])
    base = f"http://127.0.0.1:{proxy.port}"
    for path, name in [("/api/v1", "api"), ("/apis", "root"), ("/", "root")]:
        async with http.get(base + path) as response:
            assert (await response.text()).split()[0] == name


async def test_proxy_sends_requests_with_the_header_to_the_header_route_whatever_the_weights(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    stable, canary = await make_backend("stable"), await make_backend("canary")
    weighted = route("/", (stable, 100), (canary, 0))
    by_header = ProxyRoute("/", (WeightedBackend(canary.host, canary.port, 1),), (("x-canary", "yes"),))
    proxy.set_routes([weighted, by_header])
    base = f"http://127.0.0.1:{proxy.port}"
    for headers, name in [({"X-Canary": "yes"}, "canary"), ({"x-canary": "no"}, "stable"), ({}, "stable")]:
        async with http.get(base + "/x", headers=headers) as response:
            assert (await response.text()).split()[0] == name, headers


async def test_proxy_streams_request_and_response_bodies(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    backend = await make_backend("echo")
    proxy.set_routes([route("/", (backend, 1))])
    payload = bytes(range(256)) * 8192  # 2 MiB, several chunks each way
    async with http.post(f"http://127.0.0.1:{proxy.port}/echo", data=in_chunks(payload)) as response:
        assert response.status == 200
        assert await response.read() == payload


async def test_proxy_splits_80_20_within_5_percent_over_2000_requests(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    heavy, light = await make_backend("heavy"), await make_backend("light")
    proxy.set_routes([route("/", (heavy, 80), (light, 20))])
    counts = await _count_names(http, f"http://127.0.0.1:{proxy.port}/", 2000)
    assert abs(counts["heavy"] / 2000 - 0.8) <= 0.05
    assert counts["heavy"] + counts["light"] == 2000


async def test_proxy_route_change_applies_to_next_request_while_in_flight_one_completes(
    make_backend, http: aiohttp.ClientSession, proxy: WeightedHttpProxy
) -> None:
    blue, green = await make_backend("blue"), await make_backend("green")
    proxy.set_routes([route("/", (blue, 1))])
    base = f"http://127.0.0.1:{proxy.port}"
    async with http.get(f"{base}/stream") as streaming:
        await asyncio.wait_for(blue.stream_started.wait(), 5)
        proxy.set_routes([route("/", (blue, 0), (green, 1))])
        # Answered while blue still holds its stream open (released only below): the change did not wait
        # for the in-flight request. A proxy that waited would not answer within the bound.
        async with http.get(f"{base}/after", timeout=aiohttp.ClientTimeout(total=10)) as response:
            assert await response.text() == "green /after"
        assert not streaming.content.at_eof()
        blue.release_stream.set()
        assert await streaming.read() == b"blue:first;blue:0;blue:1;blue:2;"


async def _count_names(http: aiohttp.ClientSession, url: str, total: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    semaphore = asyncio.Semaphore(16)

    async def one() -> None:
        async with semaphore, http.get(url) as response:
            assert response.status == 200
            counts[(await response.text()).split()[0]] += 1

    await asyncio.gather(*(one() for _ in range(total)))
    return counts


@pytest.mark.parametrize("kind", ["forwarder", "http-proxy"])
async def test_unprivileged_listener_falls_back_to_a_free_port(
    kind: str, make_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    real_create_server = loop.create_server

    async def create_server_without_privileges(*args: object, **kwargs: object) -> asyncio.Server:
        port = kwargs.get("port", args[2] if len(args) > 2 else None)
        if isinstance(port, int) and 0 < port < 1024:
            raise PermissionError(13, "Permission denied")
        return await real_create_server(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loop, "create_server", create_server_without_privileges)
    backend = await make_backend("b")
    listener: TcpForwarder | WeightedHttpProxy
    if kind == "forwarder":
        listener = TcpForwarder("127.0.0.1", 80, lambda: (backend.host, backend.port))
    else:
        listener = WeightedHttpProxy("127.0.0.1", 80)
        listener.set_routes([ProxyRoute("/", (WeightedBackend(backend.host, backend.port),))])
    with pytest.raises(PermissionError):
        await listener.start()
    await listener.start(free_port_if_unprivileged=True)
    try:
        assert listener.port >= 1024
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{listener.port}/p") as r,
        ):
            assert await r.text() == "b /p"
    finally:
        await listener.stop()
