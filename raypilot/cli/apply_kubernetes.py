"""The Kubernetes side of `raypilot apply`: whether the CLI can reach a cluster, which resource serves a kind
(discovery), whether a namespace exists, and applying an object that is not raypilot's with server-side apply
(field manager `raypilot`), or creating it when the API server is to pick its name (`generateName`).

Calls block (the official client); the command runs them on a thread."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from activities.kubernetes.client import KubeObjects, load_kube_configuration
from activities.kubernetes.resources import Resource
from raypilot.cli.apply_plan import KubeDocument, object_label
from raypilot.runs.errors import CommandError

FIELD_MANAGER: Final = "raypilot"
APPLY_PATCH: Final = "application/apply-patch+yaml"
NAMESPACES: Final = Resource("v1", "Namespace", "namespaces", namespaced=False)


def kubernetes_configured(env: Mapping[str, str]) -> bool:
    """Whether the CLI has a Kubernetes configuration at all (KUBECONFIG, ~/.kube/config or a pod's service
    account), the same places `load_kube_configuration` looks."""
    if env.get("KUBECONFIG", "").strip() or env.get("KUBERNETES_SERVICE_HOST"):
        return True
    return (Path(env.get("HOME") or Path.home()) / ".kube" / "config").is_file()


def api_message(error: ApiException) -> str:
    """The API server's own words (the Status message), else the HTTP status."""
    try:
        message = json.loads(error.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    if isinstance(message, str) and message:
        return message
    return f"{error.status} {error.reason}" if error.status else str(error.reason)


class ClusterAccess:
    """One API client for the whole command; `close()` it."""

    def __init__(self, env: Mapping[str, str]) -> None:
        try:
            configuration = load_kube_configuration(env)
        except (ConfigException, OSError) as error:
            raise CommandError(f"Kubernetes configuration: {error}") from None
        self.kube = KubeObjects(k8s.ApiClient(configuration))
        self._group_versions: dict[str, dict[str, Resource] | None] = {}

    def close(self) -> None:
        self.kube.api_client.close()

    def resource_for(self, api_version: str, kind: str) -> Resource | None:
        """The resource serving (apiVersion, kind), None when the cluster does not serve it."""
        if api_version not in self._group_versions:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                listing = self.kube.request("GET", path)
            except ApiException as error:
                if error.status != 404:
                    raise
                listing = None
            self._group_versions[api_version] = (
                None
                if listing is None
                else {
                    entry["kind"]: Resource(
                        api_version, entry["kind"], entry["name"], bool(entry.get("namespaced"))
                    )
                    for entry in listing.get("resources") or []
                    if "/" not in entry.get("name", "/")
                }
            )
        served = self._group_versions[api_version]
        return None if served is None else served.get(kind)

    def missing_namespace(self, namespace: str) -> str | None:
        """The API server's message when the namespace does not exist (`namespaces "x" not found`). A user
        who may work in a namespace but not read Namespace objects (403, common in shared clusters) is not
        stopped here: the objects' own requests get the API server's answer."""
        try:
            self.kube.request("GET", NAMESPACES.path(None, namespace))
        except ApiException as error:
            if error.status == 404:
                return api_message(error) if error.body else f'namespaces "{namespace}" not found'
            if error.status == 403:
                return None
            raise
        return None

    def apply(self, document: KubeDocument, resource: Resource) -> str:
        """Server-side apply (or create, for generateName) of one object; the output line naming it."""
        namespace = document.namespace if resource.namespaced else None
        body = dict(document.body)
        if document.name is None:
            created = self.kube.request("POST", resource.path(namespace), body=body)
            name = created["metadata"]["name"]
            return f"{object_label(document.kind, document.api_version, namespace, name)} created"
        before = self.kube.get(resource, namespace, document.name)
        # force: the applied fields become ours even when another manager set them, as `kubectl apply`
        # overwrites what the file says.
        after: dict[str, Any] = self.kube.request(
            "PATCH",
            resource.path(namespace, document.name),
            query={"fieldManager": FIELD_MANAGER, "force": "true"},
            body=body,
            content_type=APPLY_PATCH,
        )
        if before is None:
            outcome = "created"
        elif (before.get("metadata") or {}).get("resourceVersion") == (after.get("metadata") or {}).get(
            "resourceVersion"
        ):
            outcome = "unchanged"
        else:
            outcome = "configured"
        return f"{object_label(document.kind, document.api_version, namespace, document.name)} {outcome}"
