"""`raypilot`: the command line of CONTRACT section 6.

Exit status: 0 success, 2 rejected input (message on stderr), 1 other failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_REJECTED = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raypilot",
        description="Ray on Kubernetes, driven by durable Temporal workflows.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "worker", help="run a worker with every workflow and activity (same as python worker.py)"
    )
    sandbox = commands.add_parser(
        "sandbox",
        help="a local cluster: Kubernetes API, RayCluster/Job/Service/Gateway controllers",
        add_help=False,
    )
    sandbox.add_argument("sandbox_args", nargs=argparse.REMAINDER)
    demo = commands.add_parser("demo", help="everything, end to end, on this machine (make demo runs it)")
    demo.add_argument("--exit", action="store_true", help="run once, print the summary and exit")
    demo.add_argument("--dir", type=Path, default=Path.home() / ".raypilot" / "demo", help="state and logs")
    demo.add_argument("--ray", choices=("real", "simulated"), default="real", help="Ray heads of the sandbox")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "worker":
        import worker

        return worker.main()
    if args.command == "sandbox":
        # Imported lazily: the sandbox is a local tool, never part of the worker.
        from sandbox.main import sandbox_command

        return sandbox_command(list(args.sandbox_args))
    if args.command == "demo":
        from raypilot.cli.demo import run_demo

        return run_demo(args.dir, exit_after=args.exit, ray_mode=args.ray)
    return EXIT_REJECTED


if __name__ == "__main__":
    sys.exit(main())
