"""The Service and Pod `proxy` subresources: `/api/v1/namespaces/NS/services/NAME:PORT/proxy/<path>`.

A Service with a clusterIP is reached at clusterIP:port, where the sandbox Service controller's proxy listens;
a headless Service (clusterIP None, like KubeRay's head Service) at the targetPort of one of its ready pods;
a Pod at podIP:PORT. Method, query, body and headers (X-Ray-Authorization included) are forwarded, except
`Authorization`: kube-apiserver deletes it once it has authenticated the request with it, so the backend
never sees the caller's Kubernetes credentials. The response is streamed back.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from aiohttp import web
from yarl import URL

from sandbox.apiserver_handlers import read_raw_body
from sandbox.apiserver_paths import ResourcePath
from sandbox.proxy import HOP_BY_HOP_HEADERS
from sandbox.selectors import selector_from_match_labels
from sandbox.store import ApiError, Store

# Besides the hop-by-hop headers, the upstream request gets its own Host and length.
_HOP_BY_HOP = HOP_BY_HOP_HEADERS | {"host", "content-length"}
# Nor does it get Authorization: the API server's credentials, which its authentication filter consumes.
_NOT_FORWARDED = _HOP_BY_HOP | {"authorization"}
_CONNECT_TIMEOUT_S = 5.0


def _unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


def _split_name_port(name: str) -> tuple[str, str]:
    """`name`, `name:port` or `scheme:name:port` -> (name, port); port may be "" (first port)."""
    parts = name.split(":")
    if len(parts) == 3:
        return parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    return parts[0], ""


def _pod_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    if not status.get("podIP") or pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = status.get("conditions")
    if conditions:
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return bool(status.get("phase") == "Running")


def _container_port(pod: dict[str, Any], port: str) -> int | None:
    if port.isdigit():
        return int(port)
    for container in pod.get("spec", {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if not port or declared.get("name") == port:
                return int(declared["containerPort"])
    return None


def resolve_service(store: Store, namespace: str, name_port: str) -> tuple[str, int]:
    name, port = _split_name_port(name_port)
    service = store.get("v1", "Service", namespace, name)
    spec = service.get("spec") or {}
    ports = spec.get("ports") or []
    chosen = next((p for p in ports if not port or p.get("name") == port or str(p.get("port")) == port), None)
    if chosen is None:
        raise _unavailable(f'no service port "{port}" found for service "{name}"')
    cluster_ip = spec.get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        return cluster_ip, int(chosen["port"])
    selector = spec.get("selector") or {}
    pods = store.list("v1", "Pod", namespace, selector_from_match_labels(selector)) if selector else []
    target_port = str(chosen.get("targetPort", chosen.get("port")))
    for pod in pods:
        if _pod_ready(pod):
            pod_port = _container_port(pod, target_port)
            if pod_port is not None:
                return pod["status"]["podIP"], pod_port
    raise _unavailable(f'no endpoints available for service "{name}"')


def resolve_pod(store: Store, namespace: str, name_port: str) -> tuple[str, int]:
    name, port = _split_name_port(name_port)
    pod = store.get("v1", "Pod", namespace, name)
    pod_ip = (pod.get("status") or {}).get("podIP")
    if not pod_ip:
        raise _unavailable(f'pod "{name}" has no IP address yet')
    pod_port = _container_port(pod, port)
    return pod_ip, pod_port if pod_port is not None else 80


class ProxyForwarder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=_CONNECT_TIMEOUT_S),
            )
        return self._session

    async def forward(self, request: web.Request, target: ResourcePath) -> web.StreamResponse:
        assert target.name is not None
        assert target.namespace is not None
        if target.rt.kind == "Service":
            host, port = resolve_service(self.store, target.namespace, target.name)
        else:
            host, port = resolve_pod(self.store, target.namespace, target.name)
        url = URL.build(
            scheme="http",
            host=host,
            port=port,
            path=target.rest or "/",
            query_string=request.rel_url.raw_query_string,
            encoded=True,
        )
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        body = await read_raw_body(request) if request.body_exists else None
        response: web.StreamResponse | None = None
        try:
            async with self._client().request(
                request.method, url, headers=headers, data=body, allow_redirects=False
            ) as upstream:
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for key, value in upstream.headers.items():
                    if key.lower() not in _HOP_BY_HOP:
                        response.headers.add(key, value)
                if upstream.headers.get("Content-Length") is not None:
                    response.content_length = int(upstream.headers["Content-Length"])
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            if response is not None and response.prepared:
                return response  # the upstream broke mid-body; the client sees a truncated response
            raise _unavailable(f"error trying to reach {target.rt.singular}: {exc}") from None
