"""`raypilot rollout history` output and the CLI's rejections that need no Temporal (issue #18)."""

from __future__ import annotations

import io

from raypilot.cli.common import Console
from raypilot.cli.main import EXIT_REJECTED, main
from raypilot.cli.rollout_command import history_table

ROWS = [
    {
        "revision": 1,
        "outcome": "Promoted",
        "created": "2026-01-01T00:00:00Z",
        "settled": "2026-01-01T00:01:00Z",
        "rayClusterName": "svc-abcde",
        "specHash": "GS04L0CLEGN6USE6KI2HEA0UNDA0UEUT",
    },
    {
        "revision": 2,
        "outcome": "RolledBack",
        "created": "2026-01-01T00:02:00Z",
        "specHash": "44JSP91K",
        "reason": "NewClusterUnhealthy",
    },
    {
        "revision": 3,
        "outcome": "Progressing",
        "created": "2026-01-01T00:03:00Z",
        "specHash": "GS04",
        "undoOf": 1,
    },
]


def test_history_table_lists_each_revision_and_marks_the_current_one() -> None:
    lines = history_table(ROWS).splitlines()
    assert lines[0].split() == ["REVISION", "OUTCOME", "CREATED", "SETTLED", "CLUSTER", "SPEC-HASH", "NOTE"]
    assert lines[1].split() == [
        "1",
        "Promoted",
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:01:00Z",
        "svc-abcde",
        "GS04L0CLEGN6",
    ]
    assert lines[2].endswith("NewClusterUnhealthy")
    assert lines[3].endswith("current, undo of 1")
    # aligned columns: every outcome starts where the OUTCOME heading does
    column = lines[0].index("OUTCOME")
    assert [line[column:].split()[0] for line in lines[1:]] == ["Promoted", "RolledBack", "Progressing"]


def test_history_table_without_revisions() -> None:
    assert history_table([]) == "no revisions recorded yet"


def run(*argv: str) -> tuple[int, str]:
    stderr = io.StringIO()
    code = main(list(argv), Console(stdout=io.StringIO(), stderr=stderr, env={}))
    return code, stderr.getvalue()


def test_full_goes_with_promote_only_and_rollout_with_rayservices_only() -> None:
    assert run("upgrade", "abort", "--full", "rayservice/default/svc") == (
        EXIT_REJECTED,
        "error: --full goes with promote only\n",
    )
    code, message = run("rollout", "undo", "rayjob/default/job")
    assert code == EXIT_REJECTED
    assert message == "error: rollout undo applies to a rayservice, not to a rayjob\n"


def test_the_status_phase_reads_a_status_that_lists_revisions() -> None:
    from raypilot.cli.render import status_phase

    active = {"rayClusterName": "svc-a"}
    status = {"serviceStatus": "Running", "activeServiceStatus": active, "revisions": ROWS}
    assert status_phase("RayService", status) != "Unknown"
