"""Service controller: a TcpForwarder on clusterIP:port for every port of every non-headless Service,
forwarding each new connection to podIP:targetPort of a ready pod its selector matches (round robin).

Also home of what the other network controllers share: the resync loop and the pod/selector helpers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from sandbox.proxy import Target, TcpForwarder, WeightedHttpProxy
from sandbox.store import ApiError, Store

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
_RETRY_INTERVAL_S = 1.0


class ObjectSource(Protocol):
    """What a resync controller reads and writes: the sandbox's Store, or a real API server's objects as
    sandbox/realkube/apiobjects.py serves them."""

    def read_list(self, api_version: str, kind: str) -> list[Obj]: ...

    def watch(self, api_version: str, kind: str) -> AsyncIterator[Any]: ...

    def update(self, api_version: str, kind: str, obj: Obj, *, status: bool = False) -> Obj: ...


SourceT = TypeVar("SourceT", bound=ObjectSource)


class ResyncController(Generic[SourceT]):
    """Level-triggered controller: any event of a watched kind marks the world dirty, and one loop
    reconciles everything from the source. Bursts of events coalesce into a single pass."""

    watched: tuple[tuple[str, str], ...] = ()  # (apiVersion, kind)

    def __init__(self, store: SourceT) -> None:
        self.store = store
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.retry_soon = False  # set by reconcile() when something (a bind) should be retried

    async def start(self) -> None:
        if self._tasks:
            return
        self._dirty.set()
        self._tasks = [asyncio.create_task(self._watch(av, kind)) for av, kind in self.watched]
        self._tasks.append(asyncio.create_task(self._loop()))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.shutdown()

    async def reconcile(self) -> None:
        raise NotImplementedError

    async def shutdown(self) -> None:
        """Release what reconcile() acquired (listeners, addresses)."""

    def request_resync(self) -> None:
        self._dirty.set()

    async def _watch(self, api_version: str, kind: str) -> None:
        while True:
            try:
                # Without a resourceVersion the watch starts with the current objects, so no change is lost
                # between two watches.
                async for _event in self.store.watch(api_version, kind):
                    self._dirty.set()
                return  # the store was closed
            except ApiError as error:
                log.warning("%s: watch of %s ended (%s); restarting", type(self).__name__, kind, error)
                self._dirty.set()
                await asyncio.sleep(0.1)

    async def _loop(self) -> None:
        while True:
            if self.retry_soon:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), _RETRY_INTERVAL_S)
            else:
                await self._dirty.wait()
            self._dirty.clear()
            self.retry_soon = False
            try:
                await self.reconcile()
            except Exception:
                log.exception("%s: reconcile failed; retrying", type(self).__name__)
                self.retry_soon = True


# --- pods and selectors -------------------------------------------------------------------------------------


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace") or "default", meta["name"]


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A Service selector (a plain map) selects pods carrying every one of its labels."""
    return all(labels.get(name) == value for name, value in selector.items())


def pod_reports_ready(pod: Obj) -> bool:
    """Running with condition Ready=True (a terminating pod may still report it)."""
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )


def pod_is_ready(pod: Obj) -> bool:
    """Should receive new traffic: reports ready and is not terminating."""
    return pod_reports_ready(pod) and not pod["metadata"].get("deletionTimestamp")


def pod_is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def resolve_target_port(pod: Obj, target_port: int | str | None) -> int | None:
    """A Service targetPort is a number, or the name of a container port of the pod."""
    if target_port is None:
        return None
    if isinstance(target_port, int):
        return target_port
    if target_port.isdigit():
        return int(target_port)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target_port and port.get("containerPort"):
                return int(port["containerPort"])
    return None


def is_headless(service: Obj) -> bool:
    return (service.get("spec") or {}).get("clusterIP") in (None, "", "None")


class PodIndex:
    """One resync's pods by namespace and label. A Service is matched only against the pods that carry the
    rarest label of its selector: matching every Service against every pod, with a hundred RayClusters in
    a namespace, was most of the sandbox's CPU."""

    def __init__(self, pods: list[Obj]) -> None:
        self._by_label: dict[tuple[str, str, str], list[Obj]] = {}
        for pod in pods:
            namespace = key_of(pod)[0]
            for name, value in (pod["metadata"].get("labels") or {}).items():
                self._by_label.setdefault((namespace, name, str(value)), []).append(pod)

    def candidates(self, service: Obj) -> list[Obj]:
        """A superset of the pods the Service's selector selects (none without a selector)."""
        selector = (service.get("spec") or {}).get("selector") or {}
        namespace = key_of(service)[0]
        found = [self._by_label.get((namespace, name, str(value)), []) for name, value in selector.items()]
        return min(found, key=len) if found else []


def selected_pods(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The live pods (with an IP) of the Service's namespace that its selector matches, by name (`pods`: any
    namespaces', or that namespace's alone)."""
    spec = service.get("spec") or {}
    selector = spec.get("selector")
    if not selector:
        return []
    namespace = key_of(service)[0]
    return sorted(
        (
            pod
            for pod in pods
            if key_of(pod)[0] == namespace
            and selector_matches(selector, pod["metadata"].get("labels") or {})
            and (pod.get("status") or {}).get("podIP")
            and not pod_is_terminal(pod)
        ),
        key=lambda pod: str(pod["metadata"]["name"]),
    )


def service_targets(service: Obj, pods: list[Obj], port: Mapping[str, Any]) -> list[Target]:
    """podIP:targetPort of each pod that should receive connections to this Service port."""
    publish_not_ready = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    target_port = port.get("targetPort", port.get("port"))
    targets: list[Target] = []
    for pod in selected_pods(service, pods):
        if not (publish_not_ready or pod_is_ready(pod)):
            continue
        resolved = resolve_target_port(pod, target_port)
        if resolved is not None:
            targets.append((str(pod["status"]["podIP"]), resolved))
    return targets


async def start_listener(listener: TcpForwarder | WeightedHttpProxy) -> bool:
    """Binds the listener; False when the address is taken right now (the caller retries later)."""
    try:
        await listener.start(free_port_if_unprivileged=True)
        return True
    except OSError as error:
        if error.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
            raise
        log.warning("cannot bind %s:%s (%s); will retry", listener.listen_host, listener.port, error)
        return False


# --- the Service controller ---------------------------------------------------------------------------------


class _ServicePortState:
    def __init__(self, cluster_ip: str, port: int) -> None:
        self.forwarder = TcpForwarder(cluster_ip, port, self.pick)
        self.bound = False
        self.targets: list[Target] = []
        self.next_index = 0

    def pick(self) -> Target | None:
        if not self.targets:
            return None
        self.next_index %= len(self.targets)
        chosen = self.targets[self.next_index]
        self.next_index += 1
        return chosen


@dataclass
class _ServiceProxy:
    cluster_ip: str
    ports: dict[int, _ServicePortState] = field(default_factory=dict)


class ServiceController(ResyncController[Store]):
    watched = (("v1", "Service"), ("v1", "Pod"))

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._proxies: dict[Key, _ServiceProxy] = {}

    def listen_address(self, namespace: str, name: str, port: int) -> Target | None:
        """Where the proxy of Service port `port` actually listens (port differs only without privileges)."""
        proxy = self._proxies.get((namespace, name))
        state = proxy.ports.get(port) if proxy else None
        if proxy is None or state is None or not state.bound:
            return None
        return proxy.cluster_ip, state.forwarder.port

    def targets(self, namespace: str, name: str, port: int) -> list[Target]:
        """The pod endpoints new connections to the Service port currently go to."""
        proxy = self._proxies.get((namespace, name))
        state = proxy.ports.get(port) if proxy else None
        return list(state.targets) if state else []

    async def reconcile(self) -> None:
        pods = PodIndex(self.store.read_list("v1", "Pod"))
        wanted = {key_of(s): s for s in self.store.read_list("v1", "Service") if _is_proxied(s)}
        for key in list(self._proxies):
            service = wanted.get(key)
            if service is None or service["spec"]["clusterIP"] != self._proxies[key].cluster_ip:
                await self._remove(key)
        for key, service in wanted.items():
            await self._sync(key, service, pods.candidates(service))

    async def _sync(self, key: Key, service: Obj, pods: list[Obj]) -> None:
        proxy = self._proxies.setdefault(key, _ServiceProxy(service["spec"]["clusterIP"]))
        declared = service["spec"].get("ports") or []
        ports = {int(p["port"]): p for p in declared if p.get("protocol", "TCP") == "TCP"}
        for number in set(proxy.ports) - set(ports):
            await proxy.ports.pop(number).forwarder.stop()
        for number, port in ports.items():
            state = proxy.ports.get(number)
            if state is None:
                state = proxy.ports[number] = _ServicePortState(proxy.cluster_ip, number)
            targets = service_targets(service, pods, port)
            if targets != state.targets:
                # Only the choice for new connections changes; forwarded connections keep their pod.
                state.targets, state.next_index = targets, 0
            if not state.bound:
                state.bound = await start_listener(state.forwarder)
                self.retry_soon = self.retry_soon or not state.bound

    async def _remove(self, key: Key) -> None:
        proxy = self._proxies.pop(key)
        for state in proxy.ports.values():
            await state.forwarder.stop()

    async def shutdown(self) -> None:
        for key in list(self._proxies):
            await self._remove(key)


def _is_proxied(service: Obj) -> bool:
    spec = service.get("spec") or {}
    return not is_headless(service) and spec.get("type") != "ExternalName" and bool(spec.get("ports"))
