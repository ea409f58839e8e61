"""The node agent until SIGTERM or SIGINT, then every pod's processes stopped and the node's network removed:

    python -m sandbox.nodeagent --kubeconfig K --dir D [--node NAME] [--ray real|simulated] [--timings fast]

It needs root (network namespaces). `--ray simulated` runs Ray containers as simulated Ray
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


async def serve(kubeconfig: Path, directory: Path, node: str, image: RayImage) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    network = NodeNetwork.claim()
    agent = NodeAgent(api, node, directory, network, image)
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
    args = parser.parse_args(argv)
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
    asyncio.run(serve(args.kubeconfig, args.dir, args.node, image))
    return 0


if __name__ == "__main__":
    sys.exit(main())
