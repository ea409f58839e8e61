"""The node agent until SIGTERM or SIGINT, then every pod's processes stopped and the node's network removed:

    python -m sandbox.nodeagent --kubeconfig K --dir D [--node NAME] [--ray real|simulated] [--timings fast]
        [--kube-proxy BINARY --service-cidr CIDR]

It needs root (network namespaces). With `--kube-proxy`, kube-proxy answers for the Services of the control
plane's `--service-cidr` (the range its kube-apiserver hands clusterIPs from), which the host routes to the
node. `--ray simulated` runs Ray containers as simulated Ray
(sandbox/images/simulated_ray.py), with the sandbox's fast timings if `--timings fast`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from kubernetes import config

from sandbox.nodeagent.agent import NodeAgent
from sandbox.nodeagent.containers import RayImage, simulated_ray_image
from sandbox.nodeagent.network import NodeNetwork


async def serve(
    kubeconfig: Path,
    directory: Path,
    node: str,
    image: RayImage,
    kube_proxy: str | None,
    service_cidr: str | None,
) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    network = NodeNetwork.claim()
    if service_cidr:
        network.route_services(service_cidr)
    agent = NodeAgent(api, node, directory, network, image, kube_proxy)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)
    running = asyncio.ensure_future(agent.run())
    try:
        await asyncio.wait(
            [running, asyncio.ensure_future(stopped.wait())], return_when=asyncio.FIRST_COMPLETED
        )
        if running.done():
            running.result()  # the agent itself failed: say why
    finally:
        running.cancel()
        await agent.shutdown()
        api.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.nodeagent", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True, help="the agent's files: pods' logs and homes")
    parser.add_argument("--node", default="raypilot-node", help="the Node's name")
    parser.add_argument(
        "--ray", choices=("real", "simulated"), default="real", help="what Ray containers run"
    )
    parser.add_argument("--timings", choices=("default", "fast"), default="default", help="of simulated Ray")
    parser.add_argument("--kube-proxy", help="the kube-proxy binary: the node's Service data plane")
    parser.add_argument("--service-cidr", help="the control plane's Service range, routed to the node")
    args = parser.parse_args(argv)
    if bool(args.kube_proxy) != bool(args.service_cidr):
        parser.error("--kube-proxy and --service-cidr go together")
    if os.geteuid() != 0:
        print("the node agent needs root: it makes a network namespace per pod", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args.dir.mkdir(parents=True, exist_ok=True)
    image = (
        simulated_ray_image(args.dir / "simulated-ray", args.timings)
        if args.ray == "simulated"
        else RayImage()
    )
    asyncio.run(serve(args.kubeconfig, args.dir, args.node, image, args.kube_proxy, args.service_cidr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
