"""Imports the worker as it would in the image built by deploy/Dockerfile: every module of an installed
distribution outside the project's runtime dependency closure (pyproject [project] dependencies and theirs,
no extras) is made unimportable, as it is absent there. Optional imports of libraries (httpx's CLI, grpc in
temporalio) fail as they would in the image and are skipped by those libraries. Prints a JSON summary; exits
non-zero when the worker does not import. Run by tests/docs/test_deploy.py in a fresh interpreter.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType

from packaging.requirements import Requirement


def canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def runtime_closure(project: str = "raypilot") -> set[str]:
    """The distributions `pip install <project>` installs (no extras)."""
    pending = [Requirement(r) for r in metadata.distribution(project).requires or []]
    closure: set[str] = set()
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonical(requirement.name)
        if name in closure:
            continue
        closure.add(name)
        pending.extend(Requirement(r) for r in metadata.distribution(requirement.name).requires or [])
    return closure


def files_of_other_distributions(allowed: set[str]) -> dict[Path, str]:
    """Every installed file of a distribution not in `allowed`, with its distribution's name."""
    owned: dict[Path, str] = {}
    for dist in metadata.distributions():
        name = canonical(dist.metadata["Name"])
        if name in allowed or name == "raypilot":
            continue
        for file in dist.files or []:
            owned[Path(str(dist.locate_file(file))).resolve()] = name
    return owned


class AbsentFromImage(importlib.abc.MetaPathFinder):
    def __init__(self, absent: dict[Path, str]) -> None:
        self.absent = absent
        self.blocked: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
            return None
        owner = self.absent.get(Path(spec.origin).resolve())
        if owner is not None:
            self.blocked.add(owner)
            raise ModuleNotFoundError(f"{fullname} ({owner}) is not in the worker image", name=fullname)
        return None


def main() -> int:
    closure = runtime_closure()
    finder = AbsentFromImage(files_of_other_distributions(closure))
    sys.meta_path.insert(0, finder)
    import worker  # noqa: F401  (the import is the check)

    loaded = sorted({name.split(".")[0] for name in sys.modules})
    print(json.dumps({"closure": sorted(closure), "blocked": sorted(finder.blocked), "loaded": loaded}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
