"""HTTP to one RayCluster's Ray dashboard, directly or through the Kubernetes API server's service proxy.

- direct (a worker inside the cluster): `http://<head-svc>.<ns>.svc.<domain>:<port>`, 2 s timeout; the Ray
  token goes as `Authorization` and `X-Ray-Authorization`.
- proxy (a worker outside): `<apiserver>/api/v1/namespaces/<ns>/services/<head-svc>:dashboard/proxy`, 10 s
  timeout; `Authorization` carries the API server's credentials, the Ray token goes as `X-Ray-Authorization`.

The token is read from the cluster's Secret by the activity that needs it and lives only in this object:
never returned, logged or put into an error message (errors are redacted with it).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import httpx
from temporalio.exceptions import ApplicationError

from activities.errors import SECRET_MISSING, http_error, redact, retry_after_seconds
from models.naming import HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS, HTTP_CLIENT_PROXY_TIMEOUT_SECONDS
from wire.dashboard import DashboardTarget, HeadServeHealth

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

RAY_AUTH_HEADER: Final = "X-Ray-Authorization"
MAX_ERROR_BODY_CHARS: Final = 500


async def read_ray_token(dependencies: ActivityDependencies, target: DashboardTarget) -> str | None:
    """The cluster's Ray auth token when it uses token auth; a retryable RayAuthTokenMissing error while its
    Secret (or the key) does not exist yet."""
    if not target.auth_secret:
        return None
    token = await dependencies.apiserver().read_secret_value(
        target.namespace, target.auth_secret, target.auth_secret_key
    )
    if not token:
        raise ApplicationError(
            f'Ray auth token not found: secret "{target.auth_secret}" in namespace "{target.namespace}" '
            f"has no key {target.auth_secret_key}",
            type=SECRET_MISSING,
        )
    return token


class DashboardClient:
    def __init__(
        self, dependencies: ActivityDependencies, target: DashboardTarget, token: str | None
    ) -> None:
        self.dependencies = dependencies
        self.target = target
        self._token = token
        self.proxy = dependencies.dashboard_access == "proxy"
        self.timeout = float(
            HTTP_CLIENT_PROXY_TIMEOUT_SECONDS if self.proxy else HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS
        )

    @classmethod
    async def open(cls, dependencies: ActivityDependencies, target: DashboardTarget) -> DashboardClient:
        return cls(dependencies, target, await read_ray_token(dependencies, target))

    def _auth_headers(self) -> dict[str, str]:
        if not self._token:
            return {}
        bearer = f"Bearer {self._token}"
        if self.proxy:
            return {RAY_AUTH_HEADER: bearer}
        return {"Authorization": bearer, RAY_AUTH_HEADER: bearer}

    def redact(self, text: str) -> str:
        return redact(text, [self._token] if self._token else [])

    async def request(self, method: str, path: str, json_body: Any = None) -> httpx.Response:
        """One dashboard request (`path` starts with "/", may carry a query). Transport failures raise httpx
        errors; use `error` / `transport_error` to classify."""
        headers = self._auth_headers()
        content = None
        if json_body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(json_body).encode()
        if self.proxy:
            target = self.target
            proxy_path = (
                f"/api/v1/namespaces/{target.namespace}/services/{target.head_service}:{target.port_name}"
                "/proxy"
            )
            return await self.dependencies.apiserver().request(
                method, proxy_path + path, headers=headers, content=content, request_timeout=self.timeout
            )
        url = f"http://{self.target.direct_address(self.dependencies.cluster_domain)}{path}"
        return await self.dependencies.http.request(
            method, url, headers=headers, content=content, timeout=self.timeout
        )

    async def call(
        self, method: str, path: str, what: str, json_body: Any = None, *, none_if_missing: bool = False
    ) -> httpx.Response | None:
        """`request` with every failure classified: transport errors and non-2xx answers raise; a 404 gives
        None when `none_if_missing` (the job or app does not exist, which the caller treats as an answer)."""
        try:
            response = await self.request(method, path, json_body)
        except httpx.HTTPError as exc:
            raise self.transport_error(exc, what) from None
        if none_if_missing and response.status_code == 404:
            return None
        if not response.is_success:
            raise self.error(response, what)
        return response

    def error(self, response: httpx.Response, what: str) -> ApplicationError:
        """The classified error for a non-2xx answer: "<what>: HTTP <status>: <body>"."""
        return http_error(
            "dashboard",
            response.status_code,
            what,
            response.text[:MAX_ERROR_BODY_CHARS],
            retry_after=retry_after_seconds(dict(response.headers)),
            secrets=[self._token] if self._token else [],
        )

    def transport_error(self, exc: httpx.HTTPError, what: str) -> ApplicationError:
        return http_error(
            "dashboard", 0, what, f"{type(exc).__name__}: {exc}", secrets=[self._token] if self._token else []
        )


# The API server's own answer when the Pod behind its proxy does not answer (real and sandbox alike).
PROXY_UNREACHABLE_MESSAGE: Final = "error trying to reach"


def proxied_serve_health(status_code: int, body: str) -> bool | None:
    """/-/healthz through the API server's Pod proxy: 200 is healthy; an error the API server answered
    itself (a Kubernetes Status: throttled, overloaded, an internal error) says nothing about the Serve
    proxy, so None (unknown: the head's label stays as it is); the Pod not reachable, or the Serve proxy
    answering anything else, is unhealthy, as KubeRay's direct check sees it."""
    if status_code == 200:
        return True
    if status_code == 429:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    if not isinstance(answer, dict) or answer.get("kind") != "Status" or answer.get("apiVersion") != "v1":
        return False
    return False if PROXY_UNREACHABLE_MESSAGE in str(answer.get("message", "")) else None


async def head_serve_healthy(dependencies: ActivityDependencies, head: HeadServeHealth) -> bool | None:
    """KubeRay's head Serve label check: healthy iff /-/healthz answers 200 (no answer: unhealthy). Through
    the API server, None when the API server itself failed the request (see `proxied_serve_health`)."""
    path = "/-/healthz"
    try:
        if dependencies.dashboard_access == "proxy":
            response = await dependencies.apiserver().request(
                "GET",
                f"/api/v1/namespaces/{head.namespace}/pods/{head.pod_name}:{head.serve_port}/proxy{path}",
                request_timeout=float(HTTP_CLIENT_PROXY_TIMEOUT_SECONDS),
            )
            return proxied_serve_health(response.status_code, response.text)
        if not head.pod_ip:
            return False
        response = await dependencies.http.get(
            f"http://{head.pod_ip}:{head.serve_port}{path}",
            timeout=float(HTTP_CLIENT_DIRECT_TIMEOUT_SECONDS),
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200
