"""Gateway controller: each Gateway gets an address from 127.0.2.0/24 and a WeightedHttpProxy at every HTTP
listener port; HTTPRoutes naming the Gateway become the proxy's routes (PathPrefix matches, weighted
backendRefs to Services at clusterIP:port). Statuses follow Gateway API v1 (reference part B.1).

Supported subset: listener protocol HTTP; route matches on path type PathPrefix, with Exact header matches
(other match kinds are skipped and reported); hostnames are not used for routing; cross-namespace
backendRefs are refused (RefNotPermitted: the sandbox serves no ReferenceGrant).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from sandbox.gateway.resync import (
    Key,
    Obj,
    ObjectSource,
    ResyncController,
    key_of,
    start_listener,
)
from sandbox.gateway.routes import (
    CONTROLLER_NAME,
    GATEWAY_API_VERSION,
    ServiceAddress,
    attach,
    gateway_parent_refs,
    gateway_status,
    keep_transition_times,
    resolve_route,
    route_parent_status,
)
from sandbox.netalloc import AddressPool
from sandbox.proxy import ProxyRoute, Target, WeightedHttpProxy

log = logging.getLogger(__name__)

# --- the controller -----------------------------------------------------------------------------------------


@dataclass
class _GatewayState:
    address: str
    proxies: dict[int, WeightedHttpProxy] = field(default_factory=dict)  # listener port -> proxy
    bound: set[int] = field(default_factory=set)


class GatewayController(ResyncController[ObjectSource]):
    """Gateways get their addresses from `pool`. `service_address` tells where a Service port really
    listens: in the sandbox, when the Service controller had to bind another port (no privilege for ports
    < 1024); beside a real API server, at one of the Service's endpoints (there is no Service proxy)."""

    watched: tuple[tuple[str, str], ...] = (
        (GATEWAY_API_VERSION, "Gateway"),
        (GATEWAY_API_VERSION, "HTTPRoute"),
        ("v1", "Service"),
        ("v1", "Namespace"),
    )

    def __init__(
        self, store: ObjectSource, pool: AddressPool, service_address: ServiceAddress | None = None
    ) -> None:
        super().__init__(store)
        self.pool = pool
        self.service_address = service_address
        self._gateways: dict[Key, _GatewayState] = {}
        self._ever_bound: set[tuple[Key, int]] = set()

    def listen_address(self, namespace: str, name: str, port: int) -> Target | None:
        """Where the listener on `port` of the Gateway actually listens, once bound."""
        state = self._gateways.get((namespace, name))
        if state is None or port not in state.bound:
            return None
        return state.address, state.proxies[port].port

    def proxy(self, namespace: str, name: str, port: int) -> WeightedHttpProxy | None:
        state = self._gateways.get((namespace, name))
        return state.proxies.get(port) if state else None

    async def reconcile(self) -> None:
        live = {
            key_of(g): g
            for g in self.store.read_list(GATEWAY_API_VERSION, "Gateway")
            if not g["metadata"].get("deletionTimestamp")
        }
        for key in self._gateways.keys() - live.keys():
            await self._remove(key)
        for key, gateway in live.items():
            await self._bring_up(key, gateway)
        if self._has_unbound_listeners():
            # From here on nothing awaits until the binds: the routes come from one consistent view of the
            # store, and a listener about to be bound has them before it accepts its first connection.
            self._route_and_report(write_statuses=False)
            await self._bind_listeners()
        self._route_and_report()  # the statuses show the listeners as bound now

    def _has_unbound_listeners(self) -> bool:
        return any(set(state.proxies) - state.bound for state in self._gateways.values())

    async def _bring_up(self, key: Key, gateway: Obj) -> None:
        """The Gateway's state and a proxy per HTTP listener port (bound later); ports gone are closed."""
        state = self._gateways.get(key)
        if state is None:
            state = self._gateways[key] = _GatewayState(self._claim_address(gateway))
        ports = {
            int(listener["port"])
            for listener in (gateway.get("spec") or {}).get("listeners") or []
            if listener.get("protocol") == "HTTP"
        }
        for port in set(state.proxies) - ports:
            state.bound.discard(port)
            await state.proxies.pop(port).stop()
        for port in ports - state.bound:
            state.proxies.setdefault(port, self._proxy(key, state.address, port))

    def _proxy(self, key: Key, address: str, port: int) -> WeightedHttpProxy:
        return WeightedHttpProxy(address, port, f"gateway {key[0]}/{key[1]} of controller {id(self):x}")

    async def _bind_listeners(self) -> None:
        """Binds every proxy not bound yet."""
        for key, state in self._gateways.items():
            for port, proxy in list(state.proxies.items()):
                if port in state.bound:
                    continue
                if await start_listener(proxy):
                    state.bound.add(port)
                    # A listener bound again while its Gateway lives is a gap for its clients: say so.
                    again = (key, port) in self._ever_bound
                    self._ever_bound.add((key, port))
                    log.log(
                        logging.WARNING if again else logging.INFO,
                        "gateway %s/%s listens on %s:%s%s",
                        *key,
                        state.address,
                        port,
                        " again" if again else "",
                    )
                else:
                    self.retry_soon = True
                    if not state.bound and not any(bound == key for bound, _ in self._ever_bound):
                        # Another process (a second sandbox on this machine) holds the address. No client
                        # has reached the Gateway there yet, so it moves instead of waiting for it.
                        self._move(key, state)
                        break

    def _move(self, key: Key, state: _GatewayState) -> None:
        """A new address for a Gateway none of whose listeners was ever bound."""
        taken = state.address
        state.address = self.pool.allocate()
        self.pool.release(taken)  # after the allocation, so that the move lands elsewhere
        state.proxies = {port: self._proxy(key, state.address, port) for port in state.proxies}
        log.info("gateway %s/%s: %s is taken on this machine; moving to %s", *key, taken, state.address)

    def _claim_address(self, gateway: Obj) -> str:
        """Keep the address the status already shows (a restarted controller), else take a new one."""
        for entry in (gateway.get("status") or {}).get("addresses") or []:
            value = entry.get("value")
            if value and self.pool.contains(value) and not self.pool.in_use(value):
                self.pool.reserve(value)
                return str(value)
        return self.pool.allocate()

    def _route_and_report(self, write_statuses: bool = True) -> None:
        gateways = {key_of(g): g for g in self.store.read_list(GATEWAY_API_VERSION, "Gateway")}
        services = {key_of(s): s for s in self.store.read_list("v1", "Service")}
        ns_labels = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {}
            for n in self.store.read_list("v1", "Namespace")
        }
        routes = sorted(
            self.store.read_list(GATEWAY_API_VERSION, "HTTPRoute"),
            key=lambda r: (r["metadata"].get("creationTimestamp", ""), key_of(r)),
        )
        proxy_routes: dict[tuple[Key, int], list[ProxyRoute]] = {}
        attached: dict[Key, dict[str, int]] = {}
        for route in routes:
            resolved = resolve_route(route, services, self.service_address)
            parents = []
            for parent_ref, gateway_key in gateway_parent_refs(route):
                gateway = gateways.get(gateway_key)
                attachment = attach(route, parent_ref, gateway, ns_labels.get(key_of(route)[0], {}))
                parents.append(route_parent_status(route, parent_ref, attachment, resolved))
                if gateway is None or not attachment.listeners:
                    continue
                for listener in gateway["spec"]["listeners"]:
                    if listener["name"] in attachment.listeners:
                        counts = attached.setdefault(gateway_key, {})
                        counts[listener["name"]] = counts.get(listener["name"], 0) + 1
                        port_routes = proxy_routes.setdefault((gateway_key, int(listener["port"])), [])
                        port_routes.extend(r for r in resolved.proxy_routes if r not in port_routes)
            if write_statuses:
                self._write_route_status(route, parents)
        for key, state in self._gateways.items():
            for port, proxy in state.proxies.items():
                wanted = proxy_routes.get((key, port), [])
                if proxy.routes and not wanted:
                    # A listener losing its last route (its HTTPRoute deleted or detached) answers 404 at
                    # once: say what this pass read, so that such a 404 can be told from a route not made yet.
                    log.info(
                        "gateway %s/%s port %s: no route left; HTTPRoutes read: %s",
                        *key,
                        port,
                        [(key_of(r), r["metadata"].get("resourceVersion")) for r in routes],
                    )
                proxy.set_routes(wanted)
            if key in gateways and write_statuses:
                self._write_gateway_status(gateways[key], state, attached.get(key, {}))

    def _write_route_status(self, route: Obj, ours: list[Obj]) -> None:
        status = route.get("status") or {}
        previous = {
            _ref_id(p["parentRef"]): p
            for p in status.get("parents") or []
            if p.get("controllerName") == CONTROLLER_NAME
        }
        for entry in ours:
            before = previous.get(_ref_id(entry["parentRef"]))
            keep_transition_times(entry["conditions"], before["conditions"] if before else None)
        others = [p for p in status.get("parents") or [] if p.get("controllerName") != CONTROLLER_NAME]
        parents = others + ours
        if parents != (status.get("parents") or []):
            self.store.update(
                GATEWAY_API_VERSION,
                "HTTPRoute",
                _with_status(route, {**status, "parents": parents}),
                status=True,
            )

    def _write_gateway_status(self, gateway: Obj, state: _GatewayState, attached: dict[str, int]) -> None:
        listening = {port: state.proxies[port].port for port in state.bound}
        status = gateway_status(gateway, state.address, listening, attached)
        old = gateway.get("status") or {}
        keep_transition_times(status["conditions"], old.get("conditions"))
        old_listeners = {entry.get("name"): entry for entry in old.get("listeners") or []}
        for listener in status["listeners"]:
            keep_transition_times(
                listener["conditions"], old_listeners.get(listener["name"], {}).get("conditions")
            )
        if {**old, **status} != old:
            self.store.update(
                GATEWAY_API_VERSION, "Gateway", _with_status(gateway, {**old, **status}), status=True
            )

    async def _remove(self, key: Key) -> None:
        state = self._gateways.pop(key)
        for proxy in state.proxies.values():
            await proxy.stop()
        self.pool.release(state.address)

    async def shutdown(self) -> None:
        for key in list(self._gateways):
            await self._remove(key)


def _ref_id(parent_ref: Obj) -> tuple[Any, ...]:
    return tuple(parent_ref.get(f) for f in ("group", "kind", "namespace", "name", "sectionName", "port"))


def _with_status(obj: Obj, status: Obj) -> Obj:
    """The object for a status update, without resourceVersion: a concurrent spec change is no conflict."""
    metadata = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return {**obj, "metadata": metadata, "status": status}
