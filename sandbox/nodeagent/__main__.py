"""`python -m sandbox.nodeagent --kubeconfig K --dir D [--node NAME]`: the node agent until SIGTERM or SIGINT,
then every pod's processes stopped and the node's network removed. It needs root (network namespaces)."""

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
from sandbox.nodeagent.network import NodeNetwork


async def serve(kubeconfig: Path, directory: Path, node: str) -> None:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    network = NodeNetwork.claim()
    agent = NodeAgent(api, node, directory, network)
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
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("the node agent needs root: it makes a network namespace per pod", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args.dir.mkdir(parents=True, exist_ok=True)
    asyncio.run(serve(args.kubeconfig, args.dir, args.node))
    return 0


if __name__ == "__main__":
    sys.exit(main())
