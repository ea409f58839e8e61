"""The Kubernetes API as plain JSON, through the official client's configuration, auth and connection pool.

`load_kube_configuration` resolves where the API is (docs/contract.md §2: KUBECONFIG, then the standard
~/.kube/config, then the in-cluster service account). `KubeObjects` does the REST verbs on objects as dicts:
the typed client models would drop fields they do not know (custom resources, newer API fields), and the
workflows decide on JSON anyway. Its calls block; activities using it are synchronous and run on the worker's
thread pool.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import urllib3
from kubernetes import client, config
from kubernetes.client.api_client import RequestSerialized
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from activities.errors import kubernetes_error, status_reason
from activities.kubernetes.resources import Resource

JSON: Final = "application/json"
MERGE_PATCH: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
REQUEST_TIMEOUT: Final = (5.0, 30.0)  # (connect, read) seconds
CONFLICT_ATTEMPTS: Final = 5
CONNECTION_POOL_SIZE: Final = 32
# urllib3 retries connection failures inside a request (e.g. a pooled connection the server closed). A 429 or
# 503 is not slept on here: it surfaces as an error whose next_retry_delay (Retry-After) tells Temporal.
# A read that meets a server error or no answer is sent again after a short pause, twice at most, before it
# fails its activity: an activity that reads several kinds (an owner's objects, one list per kind) would
# otherwise fail whole on any one of them, and each failed attempt lengthens Temporal's backoff (seen: a
# RayService's delete took 11 attempts and three minutes on an API answering 10 % of requests with 500).
# Writes are not repeated here (Temporal retries the activity; creates and deletes are idempotent there).
READ_RETRY_STATUSES: Final = frozenset({0, 500, 502, 504})
READ_RETRY_PAUSES: Final = (0.1, 0.3)
TRANSPORT_RETRIES: Final = urllib3.Retry(
    total=2, connect=2, read=0, status=0, other=0, redirect=0, respect_retry_after_header=False
)


def load_kube_configuration(env: Mapping[str, str]) -> client.Configuration:
    """KUBECONFIG when set (a path list, as kubectl reads it), else ~/.kube/config when it exists, else the
    in-cluster config. A KUBECONFIG that does not load is an error, never a silent fallback."""
    configuration = client.Configuration()
    kubeconfig = env.get("KUBECONFIG", "").strip()
    default_path = Path(env.get("HOME") or Path.home()) / ".kube" / "config"
    if kubeconfig:
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    elif default_path.is_file():
        config.load_kube_config(config_file=str(default_path), client_configuration=configuration)
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise ConfigException(
                f"no Kubernetes configuration: set KUBECONFIG, create ~/.kube/config, or run in a pod ({exc})"
            ) from None
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    configuration.retries = TRANSPORT_RETRIES
    return configuration


def running_in_pod(env: Mapping[str, str]) -> bool:
    return bool(env.get("KUBERNETES_SERVICE_HOST"))


@contextlib.contextmanager
def kubernetes_errors(what: str) -> Iterator[None]:
    """Turn an ApiException escaping the block into the classified ApplicationError."""
    try:
        yield
    except ApiException as exc:
        raise kubernetes_error(exc, what) from None


class KubeObjects:
    """REST verbs on Kubernetes objects as JSON dicts. Errors surface as ApiException (status 0 when there
    was no answer); wrap calls in `kubernetes_errors` to classify them."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client

    # ---- transport ---------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = JSON,
    ) -> Any:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = self.api_client.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        for pause in (*READ_RETRY_PAUSES, None):
            try:
                return self._send(serialized)
            except ApiException as exc:
                if method != "GET" or exc.status not in READ_RETRY_STATUSES or pause is None:
                    raise
            time.sleep(pause)
        raise AssertionError("unreachable: the last pause is None")

    def _send(self, serialized: RequestSerialized) -> Any:
        try:
            response = self.api_client.call_api(*serialized, _request_timeout=REQUEST_TIMEOUT)
            data = response.read()
        except urllib3.exceptions.HTTPError as exc:
            raise ApiException(status=0, reason=f"{type(exc).__name__}: {exc}") from None
        if not 200 <= response.status <= 299:
            raise ApiException(http_resp=response)
        return json.loads(data) if data else None

    # ---- verbs ---------------------------------------------------------------------------------------------
    def get(self, resource: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            found: dict[str, Any] = self.request("GET", resource.path(namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        listing = self.request("GET", resource.path(namespace), query=query)
        items: list[dict[str, Any]] = listing.get("items") or []
        for item in items:  # list items may omit them
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return items

    def create(self, resource: Resource, body: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """Create the object; when it exists already, the existing one. Returns (object, created)."""
        namespace = (body.get("metadata") or {}).get("namespace")
        name = (body.get("metadata") or {}).get("name")
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                created: dict[str, Any] = self.request("POST", resource.path(namespace), body=dict(body))
                return created, True
            except ApiException as exc:
                if exc.status != 409 or not name:
                    raise
                if status_reason(exc.body) != "AlreadyExists":
                    if attempt == CONFLICT_ATTEMPTS - 1:
                        raise
                    continue
            existing = self.get(resource, namespace, name)
            if existing is not None:
                return existing, False
            # Deleted between our create and our read: create again.
        raise ApiException(status=409, reason=f"{resource.describe(namespace, name)} keeps conflicting")

    def replace(self, resource: Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        metadata = body.get("metadata") or {}
        path = resource.path(metadata.get("namespace"), metadata.get("name"))
        replaced: dict[str, Any] = self.request("PUT", path, body=dict(body))
        return replaced

    def merge_patch(
        self, resource: Resource, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """JSON merge patch; None when the object does not exist."""
        try:
            patched: dict[str, Any] = self.request(
                "PATCH", resource.path(namespace, name), body=dict(patch), content_type=MERGE_PATCH
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return patched

    def json_patch(
        self, resource: Resource, namespace: str | None, name: str, ops: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any] | None:
        """JSON Patch (RFC 6902), applied whole or not at all (a failed `test`: ApiException 422); None when
        the object does not exist."""
        try:
            patched: dict[str, Any] = self.request(
                "PATCH",
                resource.path(namespace, name),
                body=[dict(op) for op in ops],
                content_type=JSON_PATCH,
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return patched

    def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        """Request deletion; False when the object was already gone (or, with `uid`, replaced by a namesake
        that must not be deleted)."""
        options: dict[str, Any] = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": propagation,
        }
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            self.request("DELETE", resource.path(namespace, name), body=options)
        except ApiException as exc:
            if exc.status == 404:
                return False
            if exc.status == 409 and uid:
                return False  # the uid precondition failed: the object we meant is gone already
            raise
        return True

    def update_with_retry(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any] | None],
    ) -> dict[str, Any] | None:
        """Read-modify-write: `mutate(current)` returns the object to write (its resourceVersion kept, so a
        concurrent writer makes the PUT fail with 409) or None when nothing needs to change. Conflicts are
        retried on a fresh read. Returns the written (or unchanged) object, None when it does not exist."""
        for attempt in range(CONFLICT_ATTEMPTS):
            current = self.get(resource, namespace, name)
            if current is None:
                return None
            desired = mutate(current)
            if desired is None:
                return current
            try:
                return self.replace(resource, desired)
            except ApiException as exc:
                if exc.status == 404:
                    return None
                if exc.status != 409 or attempt == CONFLICT_ATTEMPTS - 1:
                    raise
        return None  # not reached: the last attempt returns or raises
