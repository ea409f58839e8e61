"""What `raypilot apply -f` reads, as `kubectl apply -f` reads it: each -f a file, a directory (its .yaml,
.yml and .json files, sorted by name, not recursing) or `-` for standard input; each file a YAML stream of
one or more documents or a JSON object; a `List` expands to its items."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from models.manifest import ManifestError, load_manifest_documents
from raypilot.cli.common import Console
from raypilot.runs.errors import rejected

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
STDIN: Final = "-"


@dataclass(frozen=True)
class SourceDocument:
    """One document and where it came from: `origin` names it in messages ("FILE", "FILE#2")."""

    origin: str
    body: dict[str, Any]


def manifest_files(source: str) -> list[Path]:
    """The files one -f names; a rejection when it names nothing readable."""
    path = Path(source)
    if path.is_dir():
        return sorted(
            (entry for entry in path.iterdir() if entry.is_file() and entry.suffix in MANIFEST_SUFFIXES),
            key=lambda entry: entry.name,
        )
    if not path.exists():
        raise rejected(f'the path "{source}" does not exist')
    return [path]


def expanded_lists(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A `kind: List` (or `...List` with `items`, as `kubectl get -o yaml` writes) stands for its items."""
    objects: list[dict[str, Any]] = []
    for document in documents:
        items = document.get("items")
        if str(document.get("kind", "")).endswith("List") and isinstance(items, list):
            for item in items:
                if not isinstance(item, dict):
                    raise ManifestError("a List's items must be objects")
                objects.append(item)
        else:
            objects.append(document)
    return objects


def documents_of_text(text: str, name: str) -> list[SourceDocument]:
    try:
        documents = expanded_lists(load_manifest_documents(text))
    except ManifestError as error:
        raise rejected(f"{name}: {error}") from None
    if len(documents) == 1:
        return [SourceDocument(name, documents[0])]
    return [SourceDocument(f"{name}#{number}", body) for number, body in enumerate(documents, start=1)]


def read_documents(sources: Sequence[str], console: Console) -> list[SourceDocument]:
    """Every document of every source, in order; a rejection (nothing applied) when any cannot be read."""
    documents: list[SourceDocument] = []
    for source in sources:
        if source == STDIN:
            documents.extend(documents_of_text(console.stdin_text(), "<stdin>"))
            continue
        for path in manifest_files(source):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
                raise rejected(f"cannot read {path}: {reason}") from None
            documents.extend(documents_of_text(text, str(path)))
    return documents
