"""RFC 6902 JSON Patch on plain JSON (add, remove, replace, test), as an API server applies one: all or
nothing, a failed `test` or a missing path refusing the whole patch. For the fakes and the tests of the
patches raypilot sends to HTTPRoutes its users own."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PatchRefused", "apply_json_patch"]


class PatchRefused(ValueError):
    """The patch does not apply (an API server answers 422 Unprocessable Entity)."""


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise PatchRefused(f"bad path {path!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]


def _parent(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens[:-1]:
        try:
            node = node[int(token)] if isinstance(node, list) else node[token]
        except (KeyError, IndexError, ValueError) as exc:
            raise PatchRefused(f"no {token!r} on the path") from exc
    return node


def _get(document: Any, tokens: list[str]) -> Any:
    parent, last = _parent(document, tokens), tokens[-1]
    try:
        return parent[int(last)] if isinstance(parent, list) else parent[last]
    except (KeyError, IndexError, ValueError) as exc:
        raise PatchRefused(f"nothing at {last!r}") from exc


def apply_json_patch(document: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The document after the patch (the input is not changed); PatchRefused when any operation fails."""
    result: dict[str, Any] = copy.deepcopy(dict(document))
    for op in ops:
        tokens = _tokens(str(op["path"]))
        kind = op["op"]
        if kind == "test":
            if _get(result, tokens) != op["value"]:
                raise PatchRefused(f"test failed at {op['path']}")
            continue
        parent, last = _parent(result, tokens), tokens[-1]
        if kind == "remove":
            _get(result, tokens)
            del parent[int(last) if isinstance(parent, list) else last]
        elif kind == "replace":
            _get(result, tokens)
            parent[int(last) if isinstance(parent, list) else last] = copy.deepcopy(op["value"])
        elif kind == "add":
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), copy.deepcopy(op["value"]))
            elif isinstance(parent, dict):
                parent[last] = copy.deepcopy(op["value"])
            else:
                raise PatchRefused(f"cannot add under {op['path']}")
        else:
            raise PatchRefused(f"unsupported op {kind!r}")
    return result
