"""The PATCH flavours Kubernetes accepts, for the fields raypilot and kubectl use.

- JSON merge patch (RFC 7386).
- Strategic merge patch: like a merge patch, but lists of objects with a known merge key (containers by name,
  conditions by type, ...) are merged item by item, `metadata.finalizers` is merged as a set, and the
  `$patch`, `$retainKeys`, `$setElementOrder/...` and `$deleteFromPrimitiveList/...` directives kubectl
  sends are understood.
- Server-side apply, simplified to a strategic merge of the applied configuration.
- JSON patch (RFC 6902).
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
PATCH_TYPES = (MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH, JSON_PATCH)

# Lists of objects merged item by item, by the key Kubernetes declares for them (patchMergeKey).
_MERGE_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "conditions": ("type",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "podIPs": ("ip",),
    # container ports merge on containerPort, Service ports on port.
    "ports": ("containerPort", "port"),
}
# Primitive lists merged as sets (patchStrategy=merge).
_SET_LISTS = frozenset({"finalizers"})


class PatchError(ValueError):
    """The patch cannot be applied (bad shape, failed JSON patch test, ...)."""


def json_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _merge_key_for(field: str, items: list[Any]) -> str | None:
    candidates = _MERGE_KEYS.get(field)
    if not candidates:
        return None
    for candidate in candidates:
        if all(isinstance(item, dict) and candidate in item for item in items):
            return candidate
    return None


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current_list = current if isinstance(current, list) else []
    if field in _SET_LISTS:
        merged = list(current_list)
        merged.extend(v for v in patch if v not in merged)
        return merged
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    dict_items = [item for item in patch if isinstance(item, dict)]
    key = _merge_key_for(field, dict_items + [i for i in current_list if isinstance(i, dict)])
    if key is None or len(dict_items) != len(patch):
        return copy.deepcopy(patch)
    merged = [copy.deepcopy(item) for item in current_list]
    for item in patch:
        index = next((i for i, existing in enumerate(merged) if existing.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append(strategic_merge_patch({}, item))
        else:
            merged[index] = strategic_merge_patch(merged[index], item)
    return merged


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k != "$patch"}
    if directive == "replace":
        return _strip_directives(body)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    retain = body.pop("$retainKeys", None)
    for key, value in body.items():
        if key.startswith("$setElementOrder/"):
            continue  # order hints only; merged lists keep the existing order
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return copy.deepcopy(value)


_IDENTITY_PATHS = frozenset({("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")})


def applied_paths(applied: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The leaf fields an applied configuration sets (lists count as one field: they are atomic here)."""
    if not isinstance(applied, dict) or (prefix and not applied):
        return {prefix} if prefix else set()
    paths: set[tuple[str, ...]] = set()
    for key, value in applied.items():
        if not key.startswith("$"):
            paths |= applied_paths(value, (*prefix, key))
    return paths - _IDENTITY_PATHS


def _remove_path(obj: Any, path: tuple[str, ...]) -> None:
    for part in path[:-1]:
        obj = obj.get(part) if isinstance(obj, dict) else None
    if isinstance(obj, dict):
        obj.pop(path[-1], None)


def apply_patch(target: Any, applied: Any, previously_applied: Any = None) -> Any:
    """Server-side apply for the fields used: the applied configuration merged over the live object, and the
    fields this field manager applied last time but no longer applies removed (it owned them)."""
    merged = strategic_merge_patch(target, _strip_directives(applied))
    if previously_applied is None:
        return merged
    now = applied_paths(applied)
    for path in applied_paths(previously_applied) - now:
        overlaps = any(p[: len(path)] == path or path[: len(p)] == p for p in now)
        if not overlaps:
            _remove_path(merged, path)
    return merged


def _pointer_parts(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def _resolve_parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise PatchError(f"path not found: /{'/'.join(parts)}") from exc
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _resolve_parent(doc, parts)
    try:
        return parent[int(parts[-1])] if isinstance(parent, list) else parent[parts[-1]]
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise PatchError(f"path not found: /{'/'.join(parts)}") from exc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _resolve_parent(doc, parts)
    value = _get(doc, parts)
    if isinstance(parent, list):
        parent.pop(int(parts[-1]))
    else:
        del parent[parts[-1]]
    return value


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _resolve_parent(doc, parts)
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not 0 <= index <= len(parent):
            raise PatchError(f"index out of range: {last}")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"cannot add to a scalar at /{'/'.join(parts)}")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, parts = op["op"], _pointer_parts(op["path"])
        try:
            if kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op.get("value")))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                _get(doc, parts)
                if not parts:
                    doc = copy.deepcopy(op.get("value"))
                else:
                    _remove(doc, parts)
                    doc = _add(doc, parts, copy.deepcopy(op.get("value")))
            elif kind in ("move", "copy"):
                source = _pointer_parts(op["from"])
                value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
                doc = _add(doc, parts, value)
            elif kind == "test":
                if _get(doc, parts) != op.get("value"):
                    raise PatchError(f"test operation failed at {op['path']}")
            else:
                raise PatchError(f"unknown JSON patch operation {kind!r}")
        except (ValueError, KeyError) as exc:
            if isinstance(exc, PatchError):
                raise
            raise PatchError(str(exc)) from exc
    return doc


def apply_patch_of_type(target: Any, patch: Any, patch_type: str, previously_applied: Any = None) -> Any:
    if patch_type == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise PatchError("the patch must be a JSON object")
    if patch_type == MERGE_PATCH:
        return json_merge_patch(target, patch)
    if patch_type == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(target, patch)
    if patch_type == APPLY_PATCH:
        return apply_patch(target, patch, previously_applied)
    raise PatchError(f"unsupported patch type {patch_type!r}")
