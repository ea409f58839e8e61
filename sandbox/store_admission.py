"""What the API server does to an object before storing it: validation of names and labels, the defaults
raypilot and the controllers rely on, and Service clusterIP allocation."""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

from sandbox.netalloc import AddressPool, PoolExhausted
from sandbox.resources import ResourceType
from sandbox.store_crds import InvalidDefinition, accepted_status, check_definition, is_crd

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# Kinds whose names must be DNS labels (they become DNS names or label values), the rest DNS subdomains.
_DNS_LABEL_KINDS = frozenset({"Namespace", "Service"})


class InvalidObject(ValueError):
    """The object breaks a validation rule; the message is Kubernetes' field error text."""


def validate_name(rt: ResourceType, name: str, field: str = "metadata.name") -> None:
    if rt.kind in _DNS_LABEL_KINDS:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            raise InvalidObject(
                f'{field}: Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case '
                "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                "(at most 63 characters)"
            )
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise InvalidObject(
            f'{field}: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        )


def validate_labels(labels: Any) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        raise InvalidObject("metadata.labels: Invalid value: must be a map of strings")
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or (
            len(name) > 63 or not _LABEL_NAME.match(name)
        ):
            raise InvalidObject(
                f'metadata.labels: Invalid value: "{key}": name part must be a valid label key'
            )
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
            raise InvalidObject(
                f'metadata.labels: Invalid value: "{value}": a valid label must be an empty string or '
                "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (at most 63 characters)"
            )


def validate_metadata(rt: ResourceType, meta: dict[str, Any]) -> None:
    validate_name(rt, meta["name"])
    validate_labels(meta.get("labels"))
    annotations = meta.get("annotations")
    if annotations is not None and (
        not isinstance(annotations, dict) or not all(isinstance(v, str) for v in annotations.values())
    ):
        raise InvalidObject("metadata.annotations: Invalid value: must be a map of strings")
    for field in ("finalizers", "ownerReferences"):
        if meta.get(field) is not None and not isinstance(meta[field], list):
            raise InvalidObject(f"metadata.{field}: Invalid value: must be a list")


def _default_service(obj: dict[str, Any], services: AddressPool) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for port in spec.get("ports") or []:
        port.setdefault("protocol", "TCP")
        port.setdefault("targetPort", port.get("port"))
    requested = spec.get("clusterIP")
    if requested == "None":
        spec["clusterIPs"] = ["None"]
        return
    try:
        if requested:
            services.reserve(requested)
        else:
            requested = services.allocate()
    except (ValueError, PoolExhausted) as exc:
        raise InvalidObject(f'spec.clusterIP: Invalid value: "{requested}": {exc}') from exc
    spec["clusterIP"] = requested
    spec["clusterIPs"] = [requested]


def _default_job(obj: dict[str, Any]) -> None:
    """Job defaults, and the controller-uid selector Kubernetes generates when manualSelector is unset."""
    spec = obj.setdefault("spec", {})
    for field, value in (("backoffLimit", 6), ("completions", 1), ("parallelism", 1), ("suspend", False)):
        spec.setdefault(field, value)
    spec.setdefault("completionMode", "NonIndexed")
    if not spec.get("manualSelector"):
        uid, name = obj["metadata"]["uid"], obj["metadata"]["name"]
        generated = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), **generated}
    template_spec = spec.setdefault("template", {}).get("spec") or {}
    if template_spec.get("restartPolicy") not in ("Never", "OnFailure"):
        raise InvalidObject(
            'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
        )


def _default_secret(obj: dict[str, Any]) -> None:
    """stringData is a write-only convenience: merged into data (base64), as the API server does."""
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def default_on_create(rt: ResourceType, obj: dict[str, Any], services: AddressPool) -> None:
    """Fill in server-side defaults; the metadata (uid, name) is already set."""
    if rt.group == "" and rt.kind == "Service":
        _default_service(obj, services)
    elif rt.group == "" and rt.kind == "Namespace":
        obj["status"] = {"phase": "Active"}
    elif rt.group == "" and rt.kind == "Pod":
        obj.setdefault("spec", {}).setdefault("restartPolicy", "Always")
        obj.setdefault("status", {"phase": "Pending"})
    elif rt.group == "batch" and rt.kind == "Job":
        _default_job(obj)
    elif rt.group == "" and rt.kind == "Secret":
        _default_secret(obj)
    elif is_crd(rt):
        try:
            check_definition(obj)
        except InvalidDefinition as exc:
            raise InvalidObject(str(exc)) from None
        obj["status"] = accepted_status(obj)


def admit_update(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Keep fields that are immutable or allocated by the server."""
    if rt.group == "" and rt.kind == "Service":
        old_ip = old.get("spec", {}).get("clusterIP")
        spec = new.setdefault("spec", {})
        wanted = spec.get("clusterIP")
        if wanted not in (None, "", old_ip):
            raise InvalidObject(f'spec.clusterIP: Invalid value: "{wanted}": field is immutable')
        spec["clusterIP"] = old_ip
        spec["clusterIPs"] = old.get("spec", {}).get("clusterIPs", [old_ip])
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
    elif rt.group == "" and rt.kind == "Secret":
        _default_secret(new)
    elif rt.group == "batch" and rt.kind == "Job":
        old_spec, spec = old.get("spec", {}), new.setdefault("spec", {})
        for field in ("selector", "completionMode"):
            if field in old_spec:
                spec[field] = old_spec[field]
        if spec.get("template") != old_spec.get("template"):
            raise InvalidObject("spec.template: Invalid value: field is immutable")


def release_on_delete(rt: ResourceType, obj: dict[str, Any], services: AddressPool) -> None:
    if rt.group == "" and rt.kind == "Service":
        ip = obj.get("spec", {}).get("clusterIP")
        if ip and ip != "None" and services.contains(ip):
            services.release(ip)


_SERVER_OWNED_METADATA = (
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything whose change bumps metadata.generation: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def next_state(
    rt: ResourceType, current: dict[str, Any], desired: dict[str, Any], *, status: bool
) -> dict[str, Any]:
    """The object an update of `current` to `desired` stores (resourceVersion not yet bumped).

    status=True takes only .status from desired; otherwise everything but .status (for kinds with a status
    subresource) and the server-owned metadata, with metadata.generation bumped when the spec changed."""
    if status:
        new = copy.deepcopy(current)
        if desired.get("status") is None:
            new.pop("status", None)
        else:
            new["status"] = copy.deepcopy(desired["status"])
        return new
    new = copy.deepcopy(desired)
    new["apiVersion"], new["kind"] = rt.api_version, rt.kind
    if "status" in rt.subresources:
        new.pop("status", None)
        if "status" in current:
            new["status"] = copy.deepcopy(current["status"])
    meta = new.setdefault("metadata", {})
    for server_field in _SERVER_OWNED_METADATA:
        meta.pop(server_field, None)
        if server_field in current["metadata"]:
            meta[server_field] = current["metadata"][server_field]
    meta.pop("managedFields", None)
    validate_metadata(rt, meta)
    admit_update(rt, current, new)
    if _spec_of(new) != _spec_of(current):
        meta["generation"] = current["metadata"].get("generation", 1) + 1
    return new
