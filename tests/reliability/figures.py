"""The reliability suite's figures: each S test records tried / survived / leaked / failed, and the session
prints them as one table (and, under `make reliability`, appends it to bench/RESULTS.md).

`RAYPILOT_RELIABILITY=full` selects the full runs (the issue's sizes); unset, the small seeded versions run
inside `make test`. `RAYPILOT_RELIABILITY_SEED` fixes the seed (printed either way, so any run can be
repeated); `RAYPILOT_RELIABILITY_RESULTS` names the Markdown file the table is appended to.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeVar

T = TypeVar("T", int, float)

FULL: Final = os.environ.get("RAYPILOT_RELIABILITY", "") == "full"
SEED: Final = int(os.environ.get("RAYPILOT_RELIABILITY_SEED", "") or random.SystemRandom().randrange(10_000))
RESULTS_FILE: Final = os.environ.get("RAYPILOT_RELIABILITY_RESULTS", "")


def sized(small: T, full: T) -> T:
    """The small version's size inside `make test`, the issue's under `make reliability`."""
    return full if FULL else small


@dataclass
class Figure:
    """One S test's outcome: runs tried and survived (same end state as undisturbed), objects leaked,
    requests failed, and what was injected."""

    test: str
    scenario: str
    tried: int = 0
    survived: int = 0
    leaked: int = 0
    failed_requests: int | None = None  # None: no request load in this scenario
    notes: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)  # injected faults by kind, over all runs

    def row(self) -> str:
        injected = ", ".join(f"{count} x {kind}" for kind, count in sorted(self.faults.items()))
        notes = "; ".join([*self.notes, *([f"injected {injected}"] if injected else [])]) or "-"
        return (
            f"| {self.test} | {self.scenario} | {self.survived}/{self.tried} | {self.leaked} | "
            f"{'-' if self.failed_requests is None else self.failed_requests} | {notes} |"
        )


FIGURES: list[Figure] = []


def figure(test: str, scenario: str) -> Figure:
    """A new figure for this session's table."""
    recorded = Figure(test, scenario)
    FIGURES.append(recorded)
    return recorded


def machine_load() -> str:
    one, five, _ = os.getloadavg()
    return f"load avg {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} cores"


def table() -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    mode = "full (`make reliability`)" if FULL else "small (`make test`)"
    lines = [
        f"### {when} UTC, {mode}, seed {SEED}, {machine_load()}",
        "",
        "| S | scenario | survived/tried | objects leaked | requests failed (- no load) | notes |",
        "|---|---|---|---|---|---|",
        *(recorded.row() for recorded in sorted(FIGURES, key=lambda f: f.test)),
        "",
    ]
    return "\n".join(lines)


SECTION_HEADER: Final = """
## reliability suite

`make reliability` (tests/reliability/, full sizes, simulated Ray, seeded): survived means the same end state
as an undisturbed run with no leaked object; leaked counts RayClusters, Jobs, Services, Gateways and
HTTPRoutes left over or duplicated.
"""


def append_results(path: Path) -> None:
    """Append this session's table to `path`, adding the section header the first time."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    addition = ("" if SECTION_HEADER.strip() in text else SECTION_HEADER) + "\n" + table()
    with path.open("a") as results:
        results.write(addition)
