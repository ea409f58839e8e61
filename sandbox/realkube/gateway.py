"""The sandbox's Gateway controller beside a real control plane: `python -m sandbox.realkube.gateway
--kubeconfig K` reads Gateways, HTTPRoutes, Services, Namespaces and EndpointSlices from the API server
(sandbox/realkube/apiobjects.py), runs a weighted HTTP proxy per Gateway listener on the host (addresses from
127.0.2.0/24, as in the simulated sandbox) and writes the Gateways' and HTTPRoutes' statuses back.

As gateway implementations do (Envoy Gateway, Istio), a backendRef is sent straight to an endpoint of its
Service, not through kube-proxy's clusterIP: the first ready address, by address order, of the
Service's EndpointSlices, at the port of the slice whose name is the Service port's name. A Service with no
ready endpoint is routed to a closed port, so its share of requests fails at once (502) instead of hanging on
a cluster IP nothing answers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from kubernetes import config

from sandbox.gateway.controller import GatewayController
from sandbox.gateway.routes import GATEWAY_API_VERSION
from sandbox.netalloc import gateway_pool
from sandbox.proxy import Target
from sandbox.realkube.apiobjects import ApiObjects, Resource
from sandbox.realkube.controlplane import READY_WITHIN_S, ControlPlane, ControlPlaneError, stop_process

__all__ = ["NO_ENDPOINT", "RESOURCES", "endpoint_target", "gateway_controller"]

log = logging.getLogger(__name__)
Obj = dict[str, Any]
SLICES = ("discovery.k8s.io/v1", "EndpointSlice")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NO_ENDPOINT: Target = ("127.0.0.1", 9)  # the discard port, which nothing here listens on
READY_LINE = "gateway controller ready"
STOP_WITHIN_S = 30.0

RESOURCES = (
    Resource(GATEWAY_API_VERSION, "Gateway", "gateways"),
    Resource(GATEWAY_API_VERSION, "HTTPRoute", "httproutes"),
    Resource("v1", "Service", "services"),
    Resource("v1", "Namespace", "namespaces"),
    Resource(*SLICES, "endpointslices"),
)


def endpoint_target(
    services: Iterable[Obj], slices: Iterable[Obj], namespace: str, name: str, port: int
) -> Target:
    """Where a request for port `port` of Service namespace/name goes (see the module's docstring)."""
    service = next(
        (s for s in services if (s["metadata"].get("namespace"), s["metadata"]["name"]) == (namespace, name)),
        None,
    )
    if service is None:
        return NO_ENDPOINT
    port_name = next(
        (p.get("name") or "" for p in service["spec"].get("ports") or [] if p.get("port") == port), None
    )
    if port_name is None:
        return NO_ENDPOINT
    ready: list[Target] = []
    for item in slices:
        metadata = item["metadata"]
        labels = metadata.get("labels") or {}
        if metadata.get("namespace") != namespace or labels.get(SERVICE_NAME_LABEL) != name:
            continue
        if item.get("addressType") != "IPv4":
            continue
        target_port = next(
            (p.get("port") for p in item.get("ports") or [] if (p.get("name") or "") == port_name), None
        )
        if target_port is None:
            continue
        for endpoint in item.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                ready.extend((str(address), int(target_port)) for address in endpoint.get("addresses") or [])
    return min(ready, key=_address_order) if ready else NO_ENDPOINT


def _address_order(target: Target) -> tuple[tuple[int, ...], int]:
    return tuple(int(part) for part in target[0].split(".")), target[1]


class EndpointGatewayController(GatewayController):
    """The Gateway controller with EndpointSlices among what it watches: an endpoint that turns ready or
    goes away changes where a route sends its requests."""

    watched = (*GatewayController.watched, SLICES)


def build_controller(objects: ApiObjects) -> GatewayController:
    def service_address(namespace: str, name: str, port: int) -> Target:
        return endpoint_target(
            objects.read_list("v1", "Service"), objects.read_list(*SLICES), namespace, name, port
        )

    return EndpointGatewayController(objects, gateway_pool(), service_address=service_address)


async def serve(kubeconfig: Path) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    objects = ApiObjects(api, RESOURCES)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    await objects.start()
    controller = build_controller(objects)
    await controller.start()
    print(READY_LINE, flush=True)
    try:
        await stopped.wait()
    finally:
        await controller.stop()
        await objects.close()
        api.close()


@contextlib.contextmanager
def gateway_controller(plane: ControlPlane) -> Iterator[Callable[[], None]]:
    """The controller as a process beside `plane` (admin credentials, as an installed gateway implementation
    has its own), started at once and stopped with SIGTERM (its listeners close). The block gets a function
    that returns once the controller has read every kind: the stack starts its node meanwhile, rather than
    wait seconds for this process's imports first."""
    log_path = plane.log_path("gateway-controller")
    argv = [sys.executable, "-m", "sandbox.realkube.gateway", "--kubeconfig", str(plane.kubeconfig)]
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log_file)

    def wait_ready() -> None:
        assert process.stdout is not None
        # The process prints nothing else: the line comes whole, or the process exits (end of file).
        readable, _, _ = select.select([process.stdout], [], [], READY_WITHIN_S)
        if not readable or process.stdout.readline().strip() != READY_LINE.encode():
            raise ControlPlaneError(
                f"the gateway controller did not get ready:\n{plane.log_tail('gateway-controller')}"
            )

    try:
        yield wait_ready
    finally:
        stop_process(process, STOP_WITHIN_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.realkube.gateway", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(args.kubeconfig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
