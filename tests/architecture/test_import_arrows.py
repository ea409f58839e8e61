"""The import arrows of the project point one way and never close a circle.

    models  <-  wire  <-  activities, workflows  <-  raypilot, worker.py
    (workflows.decisions: pure, only models, wire and other decisions)
    sandbox stands beside everything: it imports only models, and only tests and the CLI's sandbox command
    (raypilot.cli.main) import it.
    raypilot.runs (starting, updating and looking up runs) serves both raypilot.cli and raypilot.controller;
    neither of those imports the other (only the CLI's entry point, raypilot.cli.main, starts the controller).

Every import counts, also those inside functions or under TYPE_CHECKING: a circle hidden behind a lazy import
is still a circle for a reader. A failure names the offending import, so a new wrong-way arrow is fixed where
it is added.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("models", "wire", "activities", "workflows", "sandbox", "raypilot")
TOP_LEVEL = (*PACKAGES, "worker")

# What each part may import, by module-name prefix (the most specific prefix of the importer applies).
ALLOWED: dict[str, frozenset[str]] = {
    "models": frozenset({"models"}),
    "wire": frozenset({"models", "wire"}),
    "activities": frozenset({"models", "wire", "activities"}),
    "workflows": frozenset({"models", "wire", "workflows"}),
    "workflows.decisions": frozenset({"models", "wire", "workflows.decisions"}),
    "sandbox": frozenset({"models", "sandbox"}),
    "raypilot": frozenset({"models", "wire", "activities", "workflows", "raypilot"}),
    "raypilot.cli.main": frozenset({"models", "wire", "activities", "workflows", "raypilot", "sandbox"}),
    "raypilot.runs": frozenset({"models", "wire", "workflows", "raypilot.runs"}),
    "raypilot.controller": frozenset(
        {
            "models",
            "wire",
            "activities",
            "workflows",
            "raypilot.controller",
            "raypilot.runs",
            "raypilot.adopt",
        }
        | {"raypilot.settings", "raypilot.logs", "raypilot.tracing", "raypilot.converter", "raypilot.metrics"}
    ),
    "worker": frozenset({"raypilot"}),
}


def module_files() -> dict[str, Path]:
    files = {"worker": REPO / "worker.py"}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            files[name] = path
    return files


def imported_names(path: Path) -> Iterator[str]:
    """Every absolute import of the project's own modules in `path` (`from a import b` yields `a.b`)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
    # Relative imports are not used in this project; a new one would escape the check, so refuse it.
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path.relative_to(REPO)}: relative import (use an absolute one)")


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (a name resolved to its longest module prefix)."""
    files = module_files()

    def resolve(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(path):
            if name.split(".")[0] in TOP_LEVEL:
                target = resolve(name)
                if target is not None and target != module:
                    targets.add(target)
                    targets.update(packages_run_first(target, module, files))
        graph[module] = targets
    return graph


def packages_run_first(target: str, importer: str, files: dict[str, Path]) -> set[str]:
    """The packages whose `__init__` Python runs before `target` when `importer` imports it: each package
    above `target` that is not also above `importer` (those ran before the importer itself). Without these
    arrows a circle through a package's `__init__` (it imports a module that imports back into the package's
    modules) escapes the check although `import target` alone fails."""
    parts = target.split(".")
    ancestors = (".".join(parts[:end]) for end in range(1, len(parts)))
    return {
        package
        for package in ancestors
        if package in files and files[package].name == "__init__.py" and not within(importer, package)
    }


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def allowed_for(module: str) -> frozenset[str]:
    rule = max((prefix for prefix in ALLOWED if within(module, prefix)), key=len)
    return ALLOWED[rule]


def wrong_way_arrows(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if not any(within(target, prefix) for prefix in allowed_for(module))
    )


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return circles


def test_imports_point_the_right_way() -> None:
    assert wrong_way_arrows(import_graph()) == []


def test_no_module_imports_itself_back_through_others() -> None:
    assert import_circles(import_graph()) == []


@pytest.mark.parametrize(
    ("target", "importer", "packages"),
    [
        ("models.validation.formats", "models.rollout", {"models.validation"}),
        ("models.validation.formats", "models.validation.rayjob", set()),
        ("wire.stubs.k8s", "activities.x", {"wire", "wire.stubs"}),
        ("models.plain", "wire.y", {"models"}),
    ],
)
def test_a_package_init_is_an_arrow_of_whoever_imports_below_it(
    target: str, importer: str, packages: set[str]
) -> None:
    files = {
        name: Path(*name.split("."), "__init__.py")
        for name in ("models", "models.validation", "wire", "wire.stubs")
    }
    assert packages_run_first(target, importer, files) == packages


@pytest.mark.parametrize(
    ("graph", "arrows", "circles"),
    [
        ({"models.a": set(), "wire.b": {"models.a"}}, [], []),
        ({"models.a": {"wire.b"}, "wire.b": set()}, ["models.a -> wire.b"], []),
        ({"workflows.x": {"activities.y"}, "activities.y": set()}, ["workflows.x -> activities.y"], []),
        (
            {"workflows.decisions.d": {"workflows.w"}, "workflows.w": set()},
            ["workflows.decisions.d -> workflows.w"],
            [],
        ),
        ({"raypilot.cli.x": {"sandbox.s"}, "sandbox.s": set()}, ["raypilot.cli.x -> sandbox.s"], []),
        ({"raypilot.cli.main": {"sandbox.s"}, "sandbox.s": set()}, [], []),
        (
            {
                "activities.a": {"activities.b"},
                "activities.b": {"activities.c"},
                "activities.c": {"activities.a"},
            },
            [],
            [["activities.a", "activities.b", "activities.c"]],
        ),
    ],
)
def test_the_check_finds_what_it_should(
    graph: dict[str, set[str]], arrows: list[str], circles: list[list[str]]
) -> None:
    assert wrong_way_arrows(graph) == arrows
    assert import_circles(graph) == circles
