"""The demo's `kubectl get rayjobs.raypilot.io -w` view (raypilot.cli.demo_kubectl)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from raypilot.cli.demo_kubectl import KubectlWatch, header, kubectl_age, printed_columns

NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)


def _rayjob(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "demo-job", "creationTimestamp": "2026-01-02T03:09:15Z"}, "status": status}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45, "45s"), (119, "119s"), (192, "3m12s"), (720, "12m"), (5 * 3600 + 7, "5h"), (-3, "0s")],
)
def test_ages_read_as_kubectl_prints_them(seconds: float, text: str) -> None:
    assert kubectl_age(seconds) == text


def test_the_printer_columns_of_a_rayjob_with_none_for_what_is_unset() -> None:
    assert header("RayJob") == [
        "NAME",
        "JOB STATUS",
        "DEPLOYMENT STATUS",
        "RAY CLUSTER NAME",
        "START TIME",
        "END TIME",
        "AGE",
    ]
    row = printed_columns(
        "RayJob", _rayjob(jobDeploymentStatus="Initializing", rayClusterName="demo-job-x1"), NOW
    )
    assert row == ["demo-job", "<none>", "Initializing", "demo-job-x1", "<none>", "<none>", "45s"]


def test_a_row_is_printed_when_a_column_changes_not_when_only_the_age_does() -> None:
    lines: list[str] = []
    watch = KubectlWatch("RayJob", lines.append, prefix="")
    watch.start("kubectl get rayjobs.raypilot.io -w")
    watch.show(_rayjob(), NOW)
    watch.show(_rayjob(), NOW.replace(second=30))  # only AGE moved
    watch.show(None, NOW)  # not created yet / gone: nothing
    watch.show(_rayjob(jobStatus="RUNNING", jobDeploymentStatus="Running"), NOW)
    assert lines[0] == "$ kubectl get rayjobs.raypilot.io -w"
    assert lines[1].split() == ["NAME", "JOB", "STATUS", "DEPLOYMENT", "STATUS", "RAY", "CLUSTER", "NAME",
                                "START", "TIME", "END", "TIME", "AGE"]  # fmt: skip
    assert [line.split()[:3] for line in lines[2:]] == [
        ["demo-job", "<none>", "<none>"],
        ["demo-job", "RUNNING", "Running"],
    ]
    assert watch.rows == 2
    # Columns line up under the header, as kubectl's do.
    assert lines[3].index("Running") == lines[1].index("DEPLOYMENT STATUS")
