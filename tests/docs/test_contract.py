"""The public contract lives in the repository (docs/contract.md), and every citation of it names a section
that exists there."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).parents[2]
CONTRACT = ROOT / "docs" / "contract.md"
CITATION = re.compile(r"docs/contract\.md §(\d+)")


def tracked_texts() -> dict[Path, str]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.yaml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {ROOT / name: (ROOT / name).read_text() for name in listed if (ROOT / name).is_file()}


def test_every_citation_names_a_section_of_the_contract() -> None:
    sections = {int(number) for number in re.findall(r"^## (\d+)\. ", CONTRACT.read_text(), re.MULTILINE)}
    assert sections == set(range(1, max(sections) + 1))
    cited = {
        (path.relative_to(ROOT).as_posix(), int(number))
        for path, text in tracked_texts().items()
        for number in CITATION.findall(text)
    }
    assert len(cited) >= 10  # the worker, settings, CLI and workflows cite it
    assert [citation for citation in cited if citation[1] not in sections] == []


def test_nothing_cites_a_contract_outside_the_repository() -> None:
    outside = [path.name for path, text in tracked_texts().items() if re.search(r"CONTRACT section \d", text)]
    assert outside == []
