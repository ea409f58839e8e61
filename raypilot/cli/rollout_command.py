"""`raypilot rollout history|undo rayservice/NAMESPACE/NAME` (issue #18, docs/contract.md §8).

`history` prints the RayService's revisions (the `revisions` query: number, outcome, times, the cluster that
served it, spec hash), as a table or, with `-o json`, as JSON with each revision's manifest. `undo` sends the
`undo` update (the previous promoted revision, or `--to-revision N`); the workflow validates it first, so an
unknown revision is rejected (exit 2) and nothing changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from raypilot.cli.common import Console, ref_id
from raypilot.cli.control import accepted_update, running_rayservice
from raypilot.runs.lookup import describe_ref, with_worker_patience

__all__ = ["ROLLOUT_ACTIONS", "history_table", "rollout_command"]

ROLLOUT_ACTIONS = ("history", "undo")
COLUMNS = ("REVISION", "OUTCOME", "CREATED", "SETTLED", "CLUSTER", "SPEC-HASH", "NOTE")


def _note(row: dict[str, Any], current: bool) -> str:
    parts = []
    if current:
        parts.append("current")
    if row.get("undoOf") is not None:
        parts.append(f"undo of {row['undoOf']}")
    if row.get("reason"):
        parts.append(str(row["reason"]))
    return ", ".join(parts)


def history_table(rows: Sequence[dict[str, Any]]) -> str:
    """The revisions, oldest first, in aligned columns; the newest is marked current."""
    if not rows:
        return "no revisions recorded yet"
    lines = [
        (
            str(row.get("revision", "")),
            str(row.get("outcome", "")),
            str(row.get("created") or ""),
            str(row.get("settled") or "-"),
            str(row.get("rayClusterName") or "-"),
            str(row.get("specHash") or "")[:12],
            _note(row, index == len(rows) - 1),
        )
        for index, row in enumerate(rows)
    ]
    widths = [max(len(line[i]) for line in [COLUMNS, *lines]) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [COLUMNS, *lines]
    )


async def rollout_command(
    action: str, ref_text: str, console: Console, *, output: str = "human", to_revision: int | None = None
) -> int:
    rayservice = await running_rayservice(f"rollout {action}", ref_text, console)
    described = describe_ref(rayservice.ref)
    if action == "history":
        rows: list[dict[str, Any]] = await with_worker_patience(
            rayservice.handle.query("revisions", result_type=list),
            f"rollout history {described}",
            rayservice.task_queue,
        )
        console.out(json.dumps(rows, indent=2) if output == "json" else history_table(rows))
        return 0
    request = {"toRevision": to_revision} if to_revision is not None else {}
    result = await accepted_update(
        rayservice.handle.execute_update("undo", request, result_type=dict),
        f"rollout undo {described}",
        rayservice.task_queue,
    )
    console.out(f"{ref_id(rayservice.ref)}: {result.get('message') or 'undo accepted'}")
    return 0
