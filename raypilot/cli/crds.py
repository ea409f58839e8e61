"""`raypilot crds`: write or check the raypilot.io CustomResourceDefinitions, generated from the models."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from models.crd import KINDS, crd_name, custom_resource_definition
from raypilot.runs.errors import EXIT_FAILURE, EXIT_OK

HEADER = "# Generated from raypilot's models by `raypilot crds -o deploy/crds`: do not edit.\n"


def crd_files() -> dict[str, str]:
    """File name -> YAML text of every CRD raypilot serves."""
    return {
        f"{crd_name(kind)}.yaml": HEADER + yaml.safe_dump(custom_resource_definition(kind), sort_keys=False)
        for kind in KINDS
    }


def run_crds(directory: Path | None, *, check: bool) -> int:
    """Without a directory: print the CRDs as one YAML stream. With one: write them there, or with `check`
    report (exit 1) the files that differ from what the models generate."""
    files = crd_files()
    if directory is None:
        sys.stdout.write("---\n".join(files.values()))
        return EXIT_OK
    stale = [name for name, text in files.items() if _read(directory / name) != text]
    if check:
        for name in stale:
            message = f"{directory / name} differs from the models: run raypilot crds -o {directory}"
            print(message, file=sys.stderr)
        return EXIT_FAILURE if stale else EXIT_OK
    directory.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (directory / name).write_text(files[name])
        print(f"wrote {directory / name}")
    return EXIT_OK


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None
