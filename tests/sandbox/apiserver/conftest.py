"""Fixtures for the API server conformance tests.

The official `kubernetes` client and `kubectl` are blocking, so the server runs on its own event loop in a
background thread; tests are plain synchronous functions that talk to it over HTTP like to a real cluster.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from sandbox.apiserver import ApiServer
from sandbox.faults import FaultInjector
from sandbox.kubeconfig import write_kubeconfig
from sandbox.store import Store

T = TypeVar("T")


class ThreadedApiServer:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="sandbox-apiserver", daemon=True)
        self.store: Store
        self.server: ApiServer
        self.faults = FaultInjector(seed=7)
        self.url = ""

    def start(self) -> str:
        self._thread.start()

        async def boot() -> str:
            self.store = Store()
            self.server = ApiServer(self.store, faults=self.faults)
            return await self.server.start()

        self.url = self.run(boot())
        return self.url

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=30)

    def call(self, fn: Callable[[], T]) -> T:
        """Run fn on the server's loop (the Store is not thread-safe) and return its result."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def target() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed back to the caller's thread
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(target)
        return future.result(timeout=30)

    def stop(self) -> None:
        self.run(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(scope="module")
def apiserver() -> Iterator[ThreadedApiServer]:
    server = ThreadedApiServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kubeconfig(apiserver: ThreadedApiServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", apiserver.url)


@pytest.fixture(scope="module")
def api_client(kubeconfig: Path) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api:
        yield api


@pytest.fixture
def namespace(api_client: client.ApiClient) -> str:
    """A fresh namespace per test, so tests sharing the module's server never see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api_client).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


@pytest.fixture
def faults(apiserver: ThreadedApiServer) -> Iterator[FaultInjector]:
    yield apiserver.faults
    apiserver.call(apiserver.faults.clear)


@pytest.fixture(scope="module")
def kubectl_env(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(kubeconfig)}
