"""REST verbs on resources: get, list, watch, create, update, patch, delete, deletecollection."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import yaml
from aiohttp import web

from sandbox import apiserver_tables as tables
from sandbox import patches
from sandbox.apiserver_paths import ResourcePath
from sandbox.apiserver_protobuf import ProtobufUnsupported, decode_protobuf_object
from sandbox.apiserver_watch import serve_watch
from sandbox.store import ApiError, Store
from sandbox.store_errors import bad_request, conflict

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's request body limit


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(body, status=status, headers=headers, dumps=json.dumps)


def table_response(doc: dict[str, Any]) -> web.Response:
    return web.Response(body=json.dumps(doc).encode(), headers={"Content-Type": tables.TABLE_CONTENT_TYPE})


def error_response(error: ApiError, headers: dict[str, str] | None = None) -> web.Response:
    return json_response(error.to_status(), status=error.status, headers=headers)


def request_verb(method: str, target: ResourcePath, query: Any) -> str:
    """The Kubernetes verb of a request, as RBAC and audit name it."""
    if target.subresource == "proxy":
        return method.lower()
    collection = target.name is None
    if method == "GET":
        if collection:
            return "watch" if query.get("watch") in ("1", "true", "True") else "list"
        return "get"
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch"}
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    return verbs.get(method, method.lower())


async def read_raw_body(request: web.Request) -> bytes:
    """The whole request body; 413 beyond kube-apiserver's limit."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise _too_large()
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large() from None
    if len(raw) > MAX_BODY_BYTES:
        raise _too_large()
    return raw


async def read_body(request: web.Request, *, required: bool = True) -> Any:
    """The decoded JSON (or YAML, or protobuf for a few kinds) body; 413 when too large, 400 when it does not
    decode."""
    raw = await read_raw_body(request)
    if "protobuf" in request.content_type:
        try:
            return decode_protobuf_object(raw)
        except ProtobufUnsupported as exc:
            raise _unsupported_media(f"{exc}; send application/json") from None
    if "cbor" in request.content_type:
        raise _unsupported_media("CBOR is not served by the sandbox; send application/json")
    if not raw.strip():
        if required:
            raise bad_request("the request body is empty")
        return None
    try:
        if "yaml" in request.content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the body of the request could not be decoded: {exc}") from None


def _unsupported_media(detail: str) -> ApiError:
    return ApiError(
        415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {detail}"
    )


def _too_large() -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY_BYTES}")


def _object_body(body: Any, target: ResourcePath) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
        raise bad_request(f"the object provided is unrecognized (must be of type {target.rt.kind})")
    rt = target.rt
    if body.get("kind") not in (None, rt.kind):
        raise bad_request(
            f"the kind in the data ({body['kind']}) does not match the expected kind ({rt.kind})"
        )
    if body.get("apiVersion") not in (None, rt.api_version):
        raise bad_request(
            f"the API version in the data ({body['apiVersion']}) does not match the expected API version "
            f"({rt.api_version})"
        )
    meta = body.setdefault("metadata", {})
    if rt.namespaced:
        if meta.get("namespace") and target.namespace and meta["namespace"] != target.namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = target.namespace or meta.get("namespace")
    if target.name is not None:
        if meta.get("name") and meta["name"] != target.name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})"
            )
        meta["name"] = target.name
    return body


def _reject_dry_run(request: web.Request) -> None:
    if request.query.get("dryRun"):
        raise bad_request("dryRun is not supported by the raypilot sandbox API server")


class ResourceHandlers:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.watch_tasks: set[asyncio.Task[Any]] = set()

    async def handle(self, request: web.Request, target: ResourcePath) -> web.StreamResponse:
        method = request.method
        if target.name is None:
            if method == "POST" and target.rt.namespaced and target.namespace is None:
                raise ApiError(
                    405, "MethodNotAllowed", "a namespaced object is created in its namespace's path"
                )
            collection_handlers = {
                "GET": self._list_or_watch,
                "POST": self._create,
                "DELETE": self._delete_collection,
            }
            if method in collection_handlers:
                return await collection_handlers[method](request, target)
        elif target.subresource in (None, "status"):
            object_handlers = {"GET": self._get, "PUT": self._update, "PATCH": self._patch}
            if target.subresource is None:
                object_handlers["DELETE"] = self._delete
            if method in object_handlers:
                return await object_handlers[method](request, target)
        raise ApiError(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        )

    # ---- reads -------------------------------------------------------------------------------------------
    async def _get(self, request: web.Request, target: ResourcePath) -> web.Response:
        rt = target.rt
        assert target.name is not None
        obj = self.store.get(rt.api_version, rt.kind, target.namespace, target.name)
        if tables.wants_table(request.headers.get("Accept", "")):
            include = request.query.get("includeObject", "Metadata")
            return table_response(tables.table(rt, [obj], obj["metadata"]["resourceVersion"], include))
        return json_response(obj)

    async def _list_or_watch(self, request: web.Request, target: ResourcePath) -> web.StreamResponse:
        if request_verb("GET", target, request.query) == "watch":
            return await serve_watch(self.store, request, target, self.watch_tasks)
        rt, query = target.rt, request.query
        items = self.store.list(
            rt.api_version, rt.kind, target.namespace, query.get("labelSelector"), query.get("fieldSelector")
        )
        metadata: dict[str, Any] = {"resourceVersion": self.store.resource_version}
        limit = int(query.get("limit") or 0)
        if limit > 0:
            start = _decode_continue(query.get("continue"))
            page = items[start : start + limit]
            if start + limit < len(items):
                metadata["continue"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
                metadata["remainingItemCount"] = len(items) - start - limit
            items = page
        if tables.wants_table(request.headers.get("Accept", "")):
            doc = tables.table(
                rt,
                items,
                metadata["resourceVersion"],
                query.get("includeObject", "Metadata"),
                continue_token=metadata.get("continue"),
            )
            return table_response(doc)
        return json_response(
            {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": metadata, "items": items}
        )

    # ---- writes ------------------------------------------------------------------------------------------
    async def _create(self, request: web.Request, target: ResourcePath) -> web.Response:
        _reject_dry_run(request)
        body = _object_body(await read_body(request), target)
        if "status" in target.rt.subresources:
            body.pop("status", None)
        rt = target.rt
        return json_response(self.store.create(rt.api_version, rt.kind, body), status=201)

    async def _update(self, request: web.Request, target: ResourcePath) -> web.Response:
        _reject_dry_run(request)
        body = _object_body(await read_body(request), target)
        rt = target.rt
        return json_response(
            self.store.update(rt.api_version, rt.kind, body, status=target.subresource == "status")
        )

    async def _patch(self, request: web.Request, target: ResourcePath) -> web.Response:
        _reject_dry_run(request)
        patch_type = request.content_type
        if patch_type not in patches.PATCH_TYPES:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media "
                f"types include: {', '.join(patches.PATCH_TYPES)}",
            )
        if patch_type == patches.APPLY_PATCH and not request.query.get("fieldManager"):
            raise bad_request("PATCH requests with the apply content type must specify a fieldManager")
        body = await read_body(request)
        if patch_type == patches.APPLY_PATCH:
            body = _object_body(body, target)
        rt = target.rt
        assert target.name is not None
        existed = self.store.try_get(rt.api_version, rt.kind, target.namespace, target.name) is not None
        patched = self.store.patch(
            rt.api_version,
            rt.kind,
            target.namespace,
            target.name,
            body,
            patch_type,
            status=target.subresource == "status",
            field_manager=request.query.get("fieldManager"),
        )
        return json_response(patched, status=200 if existed else 201)

    async def _delete(self, request: web.Request, target: ResourcePath) -> web.Response:
        _reject_dry_run(request)
        rt = target.rt
        assert target.name is not None
        options = await read_body(request, required=False) or {}
        if not isinstance(options, dict):
            raise bad_request("the body of a DELETE must be DeleteOptions")
        current = self.store.get(rt.api_version, rt.kind, target.namespace, target.name)
        preconditions = options.get("preconditions") or {}
        for field in ("uid", "resourceVersion"):
            wanted = preconditions.get(field)
            if wanted and wanted != current["metadata"].get(field):
                raise conflict(rt, target.name)
        remaining = self.store.delete(
            rt.api_version, rt.kind, target.namespace, target.name, _propagation(request, options)
        )
        return json_response(remaining if remaining is not None else current)

    async def _delete_collection(self, request: web.Request, target: ResourcePath) -> web.Response:
        _reject_dry_run(request)
        rt, query = target.rt, request.query
        options = await read_body(request, required=False) or {}
        if not isinstance(options, dict):
            raise bad_request("the body of a DELETE must be DeleteOptions")
        deleted = self.store.delete_collection(
            rt.api_version,
            rt.kind,
            target.namespace,
            query.get("labelSelector"),
            query.get("fieldSelector"),
            _propagation(request, options),
        )
        return json_response(
            {
                "kind": f"{rt.kind}List",
                "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": self.store.resource_version},
                "items": deleted,
            }
        )


def _propagation(request: web.Request, options: dict[str, Any]) -> str:
    policy = request.query.get("propagationPolicy") or options.get("propagationPolicy")
    if policy:
        return str(policy)
    orphan = request.query.get("orphanDependents", options.get("orphanDependents"))
    return "Orphan" if orphan in (True, "true", "True") else "Background"


def _decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(base64.urlsafe_b64decode(token.encode()).decode())
    except ValueError:
        raise ApiError(410, "Expired", "the provided continue parameter is too old or malformed") from None
