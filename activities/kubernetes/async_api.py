"""The Kubernetes API server from async activities: watches, Secret reads, and the Service/Pod proxy.

The waits are async so that a workflow's cancellation reaches them at once (a blocking watch in a thread
would notice it only when its read returns), and the dashboard activities reach the Ray dashboard through the
API server's proxy with the same client. It reuses the official client's resolved configuration: the server
address, CA, client certificate and bearer token (refreshed through the configuration's hook, as the
in-cluster service-account token rotates).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import ssl
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, Final

import httpx
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities.errors import http_error, retry_after_seconds, status_body

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_SECONDS: Final = 10.0
WATCH_READ_MARGIN_SECONDS: Final = 5.0
# A watch cut after streaming this long is resumed at once; one cut sooner goes through the caller's back-off
# (a server that accepts watches only to drop them must not be asked again in a tight loop).
RESUMABLE_AFTER_SECONDS: Final = 1.0


class WatchCut(ApplicationError):
    """A watch whose stream broke after the server had accepted it (a proxy's or load balancer's timeout,
    an API server going away). The caller watches again from the last resourceVersion it saw, as client-go's
    reflector does: the server replays every change after it, or answers 410 Gone and the caller lists."""

    def __init__(self, error: ApplicationError, streamed_seconds: float) -> None:
        super().__init__(error.message, type=error.type, non_retryable=error.non_retryable)
        self.streamed_seconds = streamed_seconds

    @property
    def resumable(self) -> bool:
        return self.streamed_seconds >= RESUMABLE_AFTER_SECONDS


def ssl_context(configuration: client.Configuration) -> ssl.SSLContext | bool:
    """How to verify the API server and present the client certificate a kubeconfig gives."""
    if not configuration.verify_ssl:
        return False
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file or None)
    return context


class AsyncApiServer:
    def __init__(
        self, configuration: client.Configuration, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.configuration = configuration
        self.base_url = str(configuration.host).rstrip("/")
        self.http = httpx.AsyncClient(
            transport=transport,
            verify=ssl_context(configuration),
            timeout=httpx.Timeout(DEFAULT_TIMEOUT_SECONDS),
            headers={"User-Agent": "raypilot"},
            proxy=configuration.proxy or None,
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def auth_headers(self) -> dict[str, str]:
        """The API server's credentials for one request (never logged, never returned)."""
        bearer = self.configuration.auth_settings().get("BearerToken")
        return {"Authorization": str(bearer["value"])} if bearer and bearer.get("value") else {}

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        request_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> httpx.Response:
        """One request to `path` on the API server; transport errors propagate as httpx errors."""
        return await self.http.request(
            method,
            self.base_url + path,
            params=params,
            headers={**self.auth_headers(), **(headers or {})},
            content=content,
            timeout=request_timeout,
        )

    async def get_json(
        self, path: str, what: str, params: Mapping[str, str] | None = None
    ) -> dict[str, Any] | None:
        """GET a Kubernetes object or list; None on 404; classified ApplicationError otherwise."""
        try:
            response = await self.request("GET", path, params=params)
        except httpx.HTTPError as exc:
            raise http_error("kubernetes", 0, what, f"{type(exc).__name__}: {exc}") from None
        if response.status_code == 404:
            return None
        if not response.is_success:
            raise self.error(response, what)
        body: dict[str, Any] = response.json()
        return body

    @staticmethod
    def error(response: httpx.Response, what: str) -> ApplicationError:
        status = status_body(response.content)
        detail = str(status.get("message") or "") if status else response.text[:500]
        return http_error(
            "kubernetes",
            response.status_code,
            what,
            detail,
            retry_after=retry_after_seconds(dict(response.headers), status),
        )

    async def watch(
        self, path: str, params: Mapping[str, str], timeout_seconds: int, what: str
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The events of one watch request (`{"type": ..., "object": ...}`) until the server ends it after
        `timeout_seconds`. A 410 Gone (an ERROR event or status) raises an ApplicationError of type
        KubernetesGone: the caller lists again and watches from the new resourceVersion. A stream that breaks
        once accepted raises WatchCut."""
        query = {
            **params,
            "watch": "true",
            "timeoutSeconds": str(timeout_seconds),
            "allowWatchBookmarks": "true",
        }
        timeout = httpx.Timeout(DEFAULT_TIMEOUT_SECONDS, read=timeout_seconds + WATCH_READ_MARGIN_SECONDS)
        accepted_at: float | None = None
        try:
            async with self.http.stream(
                "GET", self.base_url + path, params=query, headers=self.auth_headers(), timeout=timeout
            ) as response:
                if not response.is_success:
                    await response.aread()
                    raise self.error(response, what)
                accepted_at = time.monotonic()
                async for line in response.aiter_lines():
                    if not line.strip():
                        continue
                    event: dict[str, Any] = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise http_error(
                            "kubernetes",
                            int(status.get("code") or 500),
                            what,
                            str(status.get("message") or ""),
                        )
                    yield event
        except httpx.HTTPError as exc:
            error = http_error("kubernetes", 0, what, f"{type(exc).__name__}: {exc}")
            if accepted_at is not None:
                raise WatchCut(error, time.monotonic() - accepted_at) from None
            raise error from None

    async def watch_from(
        self,
        path: str,
        params: Mapping[str, str],
        version: str,
        timeout_seconds: int,
        what: str,
        on_request: Callable[[], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Every event after resourceVersion `version`, across as many watch requests as it takes: one the
        server ends is made again from the last resourceVersion seen, and so is one cut once accepted (after
        streaming for RESUMABLE_AFTER_SECONDS at least), as client-go's reflector does. Raises what `watch`
        raises otherwise (KubernetesGone: the caller lists again). `on_request` is told of each request."""
        while True:
            if on_request is not None:
                on_request()
            try:
                request = self.watch(path, {**params, "resourceVersion": version}, timeout_seconds, what)
                async with contextlib.aclosing(request):  # ends the request when this generator is closed
                    async for event in request:
                        obj = event.get("object") or {}
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                        yield event
            except WatchCut as cut:
                if not cut.resumable:
                    raise
                log.info("%s: watch cut (%s); watching again from %s", what, cut.message, version)

    async def read_secret_value(self, namespace: str, name: str, key: str) -> str | None:
        """One decoded value of a Secret; None when the Secret or the key does not exist. The value stays
        with the caller: it is never logged or put in an error."""
        path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
        secret = await self.get_json(path, f'read secret "{name}" in namespace "{namespace}"')
        if secret is None:
            return None
        encoded = (secret.get("data") or {}).get(key)
        if encoded is not None:
            return base64.b64decode(encoded).decode("utf-8").strip()
        plain = (secret.get("stringData") or {}).get(key)
        return str(plain).strip() if plain is not None else None
