"""`raypilot`: the command line of docs/contract.md §6.

Exit status: 0 success, 2 rejected input (message on stderr), 1 other failure.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from raypilot.runs.errors import EXIT_FAILURE, EXIT_OK, EXIT_REJECTED

if TYPE_CHECKING:
    from raypilot.cli.common import Console

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_REJECTED", "build_parser", "main"]

# The commands import Temporal, Kubernetes and the models only when they run: `raypilot --help` stays quick.
UPGRADE_CONTROLS = ("pause", "resume", "promote", "abort", "retry")

REF_HELP = "KIND/NAMESPACE/NAME, e.g. rayjob/default/sample (KIND: rayjob, rayservice or raycronjob)"
CRONJOB_CONTROLS = ("trigger", "pause", "unpause", "backfill")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raypilot",
        description="Ray on Kubernetes, driven by durable Temporal workflows.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "worker", help="run a worker with every workflow and activity (same as python worker.py)"
    )
    apply = commands.add_parser(
        "apply", help="start the workflow for a manifest, or apply it to the running one (update-with-start)"
    )
    apply.add_argument(
        "-f",
        "--filename",
        required=True,
        action="append",
        metavar="FILE",
        help="YAML or JSON manifests (several documents per file), a directory of them, or - for stdin; "
        "may be repeated",
    )
    apply.add_argument(
        "--rollout",
        metavar="FILE",
        help="raypilot.io/rollout settings (YAML or JSON) for every RayService of the input",
    )
    status = commands.add_parser("status", help="print the status of a RayJob or RayService")
    status.add_argument("ref", metavar="KIND/NAMESPACE/NAME", help=REF_HELP)
    status.add_argument("-o", "--output", choices=("human", "json"), default="human", help="output format")
    status.add_argument("-w", "--watch", action="store_true", help="follow it live until the workflow closes")
    delete = commands.add_parser("delete", help="delete a RayJob or RayService (the delete update)")
    delete.add_argument("ref", metavar="KIND/NAMESPACE/NAME", help=REF_HELP)
    delete.add_argument("--no-wait", action="store_true", help="return once the deletion was accepted")
    delete.add_argument(
        "--cascade",
        choices=("background", "foreground", "orphan"),
        default="background",
        help="orphan (a RayService): let go of its RayClusters and Services, which keep serving unmanaged",
    )
    upgrade_help = (
        "control a RayService's upgrade: pause, resume, promote [--full] (finish now: skip the remaining "
        "steps, pauses and step analyses; the new replicas must still run), abort, retry (start an aborted "
        "upgrade of the same spec again)"
    )
    upgrade = commands.add_parser("upgrade", help=upgrade_help, description=upgrade_help)
    upgrade.add_argument("control", choices=UPGRADE_CONTROLS)
    upgrade.add_argument("ref", metavar="rayservice/NAMESPACE/NAME")
    upgrade.add_argument(
        "--full",
        action="store_true",
        help="promote: say it as Argo Rollouts does (promote always finishes now)",
    )
    rollout = commands.add_parser(
        "rollout", help="a RayService's revisions: history (table or -o json), undo [--to-revision N]"
    )
    rollout.add_argument("action", choices=("history", "undo"))
    rollout.add_argument("ref", metavar="rayservice/NAMESPACE/NAME")
    rollout.add_argument(
        "-o", "--output", choices=("human", "json"), default="human", help="history's format"
    )
    rollout.add_argument("--to-revision", type=int, metavar="N", help="undo: go back to revision N")
    logs = commands.add_parser("logs", help="print a RayJob's driver log, live or saved after teardown")
    logs.add_argument("ref", metavar="rayjob/NAMESPACE/NAME", help="the RayJob")
    logs.add_argument("-f", "--follow", action="store_true", help="print new lines until the Ray job ends")
    timeline = commands.add_parser(
        "timeline", help="draw a RayService's traffic and capacity, or a RayJob's states, from its history"
    )
    timeline.add_argument("ref", metavar="KIND/NAMESPACE/NAME", help=REF_HELP)
    timeline.add_argument(
        "-o", "--output", metavar="FILE", help="FILE.png or FILE.svg (default: KIND-NS-NAME-timeline.png)"
    )
    cronjob = commands.add_parser("cronjob", help="control a RayCronJob's schedule")
    cronjob.add_argument("control", choices=CRONJOB_CONTROLS)
    cronjob.add_argument("ref", metavar="raycronjob/NAMESPACE/NAME")
    cronjob.add_argument("--note", help="pause/unpause: why (shown by status and in the Web UI)")
    cronjob.add_argument("--from", dest="start", metavar="TIME", help="backfill: first tick time (RFC 3339)")
    cronjob.add_argument("--to", dest="end", metavar="TIME", help="backfill: last tick time (RFC 3339)")
    sandbox = commands.add_parser(
        "sandbox",
        help="a local cluster: the real Kubernetes stack of `make kube`, KubeRay, a node agent, a Gateway",
        add_help=False,
    )
    sandbox.add_argument("sandbox_args", nargs=argparse.REMAINDER)
    demo = commands.add_parser("demo", help="everything, end to end, on this machine (make demo runs it)")
    demo.add_argument("--exit", action="store_true", help="run once, print the summary and exit")
    demo.add_argument("--dir", type=Path, default=Path.home() / ".raypilot" / "demo", help="state and logs")
    demo.add_argument("--ray", choices=("real", "simulated"), default="real", help="the sandbox pods' Ray")
    demo.add_argument("--temporal-port", type=int, default=7233, help="the dev server's frontend port")
    demo.add_argument("--ui-port", type=int, default=8233, help="the dev server's Web UI port")
    adopt = commands.add_parser(
        "adopt", help="take over what KubeRay left after --cascade=orphan, then apply the manifest"
    )
    adopt.add_argument("ref", metavar="rayservice|rayjob/NAMESPACE/NAME")
    adopt.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="the RayService's or RayJob's manifest"
    )
    controller = commands.add_parser(
        "controller", help="drive raypilot.io RayJob and RayService objects through their workflows"
    )
    controller.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "default"))
    controller.add_argument(
        "--identity", default="", help="this replica's name in the Lease (default: unique)"
    )
    controller.add_argument("--lease-seconds", type=int, default=15, help="how long a Lease lasts unrenewed")
    controller.add_argument("--renew-seconds", type=float, default=5.0, help="how often the leader renews")
    controller.add_argument(
        "--status-interval", type=float, default=2.0, help="seconds between looks at the workflows' phases"
    )
    crds = commands.add_parser("crds", help="print or write the raypilot.io CRDs, generated from the models")
    crds.add_argument("-o", "--output-dir", type=Path, help="write one file per CRD into this directory")
    crds.add_argument("--check", action="store_true", help="with -o: exit 1 when the files differ")
    return parser


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Runs one command; `console` (streams and environment of the Temporal commands) defaults to the
    process's own. As the console script (no arguments given), it ends the process itself: see
    `exit_process`."""
    code = run_main(argv, console)
    if argv is None and console is None:
        exit_process(code)
    return code


def exit_process(code: int) -> NoReturn:
    """Ends the process with `code` without finalising the interpreter.

    The Temporal client runs on the SDK's Rust runtime, whose (tokio) threads outlive `asyncio.run`: when one
    of them finishes a task that touches a Python object (e.g. releases the future of an RPC) while the main
    thread finalises the interpreter, Python aborts with "Fatal Python error: PyGILState_Release: thread
    state ... must be current when releasing" (SIGABRT, exit 134; measured in about 1 of 4 `raypilot status`
    runs on a loaded machine). Nothing of ours needs finalisation after a command returned, so the streams
    are flushed and the process ends here, with the command's own exit status."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)


def run_main(argv: Sequence[str] | None, console: Console | None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["sandbox"]:
        # Everything after `sandbox` is the sandbox's own command line (argparse's REMAINDER would not take a
        # leading option such as `--help`). Imported lazily: the sandbox is a local tool, never in the worker.
        from sandbox.main import sandbox_command

        return sandbox_command(arguments[1:])
    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as exit_request:  # --help (0) or a usage error (2), already printed by argparse
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_REJECTED
    temporal_commands = (
        "apply",
        "status",
        "delete",
        "upgrade",
        "timeline",
        "cronjob",
        "adopt",
        "rollout",
        "logs",
    )
    if args.command in temporal_commands:
        from raypilot.cli.common import Console, run_command

        console = console or Console()
        return run_command(_temporal_command(args, console), console, interrupted=_interrupted(args))
    if args.command == "worker":
        from raypilot import worker

        return worker.main()
    if args.command == "controller":
        from raypilot.controller.main import ControllerOptions, controller_command

        return controller_command(
            ControllerOptions(
                lease_namespace=args.lease_namespace,
                identity=args.identity,
                lease_seconds=args.lease_seconds,
                renew_seconds=args.renew_seconds,
                status_interval=args.status_interval,
            )
        )
    if args.command == "crds":
        from raypilot.cli.crds import run_crds

        return run_crds(args.output_dir, check=args.check)
    if args.command == "demo":
        from raypilot.cli.demo import run_demo

        return run_demo(
            args.dir,
            exit_after=args.exit,
            ray_mode=args.ray,
            temporal_port=args.temporal_port,
            ui_port=args.ui_port,
        )
    return EXIT_REJECTED


def _interrupted(args: argparse.Namespace) -> int:
    """Ctrl-C is how one leaves `status --watch` and `logs --follow`: success there, a failure elsewhere."""
    following = (args.command == "status" and args.watch) or (args.command == "logs" and args.follow)
    return EXIT_OK if following else EXIT_FAILURE


async def _temporal_command(args: argparse.Namespace, console: Console) -> int:
    from raypilot.cli.apply_input import apply_sources
    from raypilot.cli.control import delete_object, upgrade_control
    from raypilot.cli.cronjob import cronjob_control, delete_cronjob, is_cronjob_ref, show_cronjob_status
    from raypilot.cli.status import show_status
    from raypilot.runs.errors import rejected

    if args.command == "cronjob":
        return await cronjob_control(
            args.control, args.ref, console, note=args.note, start=args.start, end=args.end
        )
    if args.command in ("status", "delete") and is_cronjob_ref(args.ref):
        if args.command == "status":
            if args.watch:
                raise rejected("--watch follows a rayjob or rayservice; a raycronjob's RayJobs are rayjobs")
            return await show_cronjob_status(args.ref, console, output=args.output)
        return await delete_cronjob(args.ref, console, wait=not args.no_wait)
    if args.command == "apply":
        return await apply_sources(args.filename, console, rollout=args.rollout)
    if args.command == "status":
        return await show_status(args.ref, console, output=args.output, watch=args.watch)
    if args.command == "logs":
        from raypilot.cli.logs_command import show_logs

        return await show_logs(args.ref, console, follow=args.follow)
    if args.command == "timeline":
        from raypilot.cli.timeline_command import draw_timeline

        return await draw_timeline(args.ref, args.output, console)
    if args.command == "delete":
        return await delete_object(args.ref, console, wait=not args.no_wait, cascade=args.cascade)
    if args.command == "rollout":
        from raypilot.cli.rollout_command import rollout_command

        return await rollout_command(
            args.action, args.ref, console, output=args.output, to_revision=args.to_revision
        )
    if args.command == "upgrade" and args.full and args.control != "promote":
        raise rejected("--full goes with promote only")
    if args.command == "adopt":
        from raypilot.cli.adopt import adopt_command

        return await adopt_command(args.ref, args.filename, console)
    return await upgrade_control(args.control, args.ref, console)


if __name__ == "__main__":
    sys.exit(main())
