"""A container's environment as the kubelet would build it (shared by the RayCluster and Job controllers).

Covers `env` (literal values with `$(VAR)` expansion, `valueFrom` secretKeyRef / configMapKeyRef / fieldRef)
and `envFrom` (secretRef / configMapRef with prefix), reading Secrets and ConfigMaps from the Store.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any, Protocol

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FIELD_PATH_KEYED = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ObjectReader(Protocol):
    def try_get(
        self, api_version: str, kind: str, namespace: str | None, name: str
    ) -> dict[str, Any] | None: ...


class EnvResolutionError(Exception):
    """A referenced Secret/ConfigMap/key is missing (the kubelet reports CreateContainerConfigError)."""


def expand_references(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: defined variables are substituted, `$$` escapes, unknown stay as-is."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REFERENCE.sub(substitute, text)


def _key_data(obj: Mapping[str, Any], key: str, *, is_secret: bool) -> str | None:
    data = obj.get("data") or {}
    if key in data:
        if not is_secret:
            return str(data[key])
        try:
            return base64.b64decode(data[key]).decode()
        except (binascii.Error, UnicodeDecodeError) as exc:
            secret_name = obj["metadata"]["name"]
            raise EnvResolutionError(f"key {key} of Secret {secret_name} is not valid base64") from exc
    string_data = obj.get("stringData") or {}
    return str(string_data[key]) if key in string_data else None


def _all_data(obj: Mapping[str, Any], *, is_secret: bool) -> dict[str, str]:
    keys = [*(obj.get("data") or {}), *(obj.get("stringData") or {})]
    values = {key: _key_data(obj, key, is_secret=is_secret) for key in keys}
    return {key: value for key, value in values.items() if value is not None}


def _from_key_ref(
    store: ObjectReader, namespace: str, ref: Mapping[str, Any], *, is_secret: bool
) -> str | None:
    kind = "Secret" if is_secret else "ConfigMap"
    name, key, optional = ref.get("name", ""), ref.get("key", ""), bool(ref.get("optional", False))
    obj = store.try_get("v1", kind, namespace, name)
    if obj is None:
        if optional:
            return None
        raise EnvResolutionError(f'{kind.lower()} "{name}" not found')
    value = _key_data(obj, key, is_secret=is_secret)
    if value is None and not optional:
        raise EnvResolutionError(f"couldn't find key {key} in {kind} {namespace}/{name}")
    return value


def field_value(pod: Mapping[str, Any], field_path: str) -> str:
    metadata, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    keyed = _FIELD_PATH_KEYED.match(field_path)
    if keyed:
        return str((metadata.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    simple: dict[str, Any] = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
    }
    if field_path not in simple:
        raise EnvResolutionError(f"unsupported fieldRef fieldPath {field_path!r}")
    return str(simple[field_path] or "")


def container_environment(
    store: ObjectReader, pod: Mapping[str, Any], container: Mapping[str, Any]
) -> dict[str, str]:
    """The variables the container would see (only those declared; the caller adds the host's own)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for ref_key, is_secret in (("secretRef", True), ("configMapRef", False)):
            ref = source.get(ref_key)
            if ref is None:
                continue
            obj = store.try_get("v1", "Secret" if is_secret else "ConfigMap", namespace, ref.get("name", ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise EnvResolutionError(f'{ref_key[:-3].lower()} "{ref.get("name")}" not found')
            env.update({prefix + key: value for key, value in _all_data(obj, is_secret=is_secret).items()})
    for var in container.get("env") or []:
        name = var["name"]
        value_from = var.get("valueFrom")
        if value_from is None:
            env[name] = expand_references(str(var.get("value", "")), env)
            continue
        if "secretKeyRef" in value_from:
            value = _from_key_ref(store, namespace, value_from["secretKeyRef"], is_secret=True)
        elif "configMapKeyRef" in value_from:
            value = _from_key_ref(store, namespace, value_from["configMapKeyRef"], is_secret=False)
        elif "fieldRef" in value_from:
            value = field_value(pod, value_from["fieldRef"].get("fieldPath", ""))
        else:
            # resourceFieldRef: the sandbox enforces no resources, so there is nothing meaningful to report.
            value = ""
        if value is not None:
            env[name] = value
    return env


def container_argv(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """`command + args` with `$(VAR)` expanded; with no command there is no image entrypoint to fall back to
    in the sandbox, so `args` alone is run."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return [expand_references(str(word), env) for word in words]
