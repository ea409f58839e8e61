"""The log store: where full driver logs stay once their RayCluster is gone (docs/logs.md).

Configured on the worker (and, to read, on the machine running `raypilot logs`) by `RAYPILOT_LOG_STORE`:

- a directory: an absolute path or `file:///path` (the sandbox's; a volume on a real cluster);
- an S3-compatible bucket: `s3://BUCKET[/PREFIX]`, at `RAYPILOT_LOG_STORE_S3_ENDPOINT` (default AWS's regional
  endpoint), path-style, with the standard `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`
  and `AWS_REGION` (or `AWS_DEFAULT_REGION`, default us-east-1) from the environment (a Secret on a cluster).

Requests to S3 are signed here with Signature Version 4 over httpx (no SDK). The credentials live only in
the store object: never returned, logged, or put into an error message.

A key is `<namespace>/<name>/<submission id>.log` (`wire.driver_log.log_store_key`); writing a key again
writes the same bytes (a finished job's log no longer changes), so a retried upload is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import hmac
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Protocol
from urllib.parse import quote

import httpx

from activities.errors import redact
from models.operator import LOG_STORE_ENV

__all__ = [
    "LOG_STORE_ENV",
    "S3_ENDPOINT_ENV",
    "DirectoryLogStore",
    "LogStore",
    "LogStoreError",
    "S3Credentials",
    "S3LogStore",
    "log_store_from_env",
    "sigv4_headers",
]

S3_ENDPOINT_ENV: Final = "RAYPILOT_LOG_STORE_S3_ENDPOINT"
DEFAULT_REGION: Final = "us-east-1"
S3_TIMEOUT_SECONDS: Final = 20.0
MAX_ERROR_BODY_CHARS: Final = 300
_RETRYABLE_STATUSES: Final = frozenset({408, 429})
# A directory store that will never take a log as configured (a full disk, say, may clear).
_PERMANENT_ERRNOS: Final = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR})


class LogStoreError(Exception):
    """The store did not take or give a log. `permanent`: it never will as configured (a 4xx: no such
    bucket, access denied); otherwise a retry may succeed (5xx, no answer)."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class LogStore(Protocol):
    def location(self, key: str) -> str:
        """Where `key` is kept, as a user would name it (`file:///...`, `s3://bucket/...`)."""
        ...

    async def put(self, key: str, data: bytes) -> str:
        """Keeps `data` under `key`; returns its location. Raises LogStoreError."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The bytes under `key`, None when there are none. Raises LogStoreError."""
        ...


@dataclass(frozen=True)
class DirectoryLogStore:
    root: Path

    def path(self, key: str) -> Path:
        return self.root.joinpath(*key.split("/"))

    def location(self, key: str) -> str:
        return self.path(key).as_uri()

    async def put(self, key: str, data: bytes) -> str:
        await asyncio.to_thread(self._write, self.path(key), data)
        return self.location(key)

    async def get(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._read, self.path(key))

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        """Atomically (a reader never sees half a log): a temporary file beside it, then a rename."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            try:
                with os.fdopen(descriptor, "wb") as file:
                    file.write(data)
                os.replace(temporary, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError as error:
            message = f"log store: cannot write {path}: {error.strerror}"
            raise LogStoreError(message, permanent=error.errno in _PERMANENT_ERRNOS) from None

    @staticmethod
    def _read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            raise LogStoreError(f"log store: cannot read {path}: {error.strerror}", permanent=True) from None


@dataclass(frozen=True)
class S3Credentials:
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str = field(default="", repr=False)

    def secrets(self) -> list[str]:
        return [value for value in (self.secret_access_key, self.session_token) if value]


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_headers(
    method: str,
    url: httpx.URL,
    payload: bytes,
    *,
    region: str,
    credentials: S3Credentials,
    now: datetime,
    service: str = "s3",
) -> dict[str, str]:
    """The headers that sign one request (AWS Signature Version 4, payload hash included; no query string):
    `x-amz-date`, `x-amz-content-sha256`, the session token if any, and `Authorization`. `url`'s path must
    be percent-encoded already (S3 signs the path as sent)."""
    moment = now.astimezone(UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    day = moment.strftime("%Y%m%d")
    payload_hash = hashlib.sha256(payload).hexdigest()
    headers = {"host": url.netloc.decode(), "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
    if credentials.session_token:
        headers["x-amz-security-token"] = credentials.session_token
    names = sorted(headers)
    canonical_headers = "".join(f"{name}:{headers[name].strip()}\n" for name in names)
    signed_headers = ";".join(names)
    canonical_request = "\n".join(
        [method, url.raw_path.decode() or "/", "", canonical_headers, signed_headers, payload_hash]
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
    )
    key = _hmac(f"AWS4{credentials.secret_access_key}".encode(), day)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    del headers["host"]  # httpx sends the same Host itself
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={signed_headers}, Signature={signature}"
    )
    return headers


@dataclass(frozen=True)
class S3LogStore:
    endpoint: str
    bucket: str
    prefix: str
    region: str
    credentials: S3Credentials = field(repr=False)
    http: httpx.AsyncClient = field(repr=False, compare=False)

    def _object(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def location(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._object(key)}"

    def url(self, key: str) -> httpx.URL:
        path = quote(f"/{self.bucket}/{self._object(key)}", safe="/-_.~")
        return httpx.URL(self.endpoint.rstrip("/") + path)

    async def _send(self, method: str, key: str, payload: bytes = b"") -> httpx.Response:
        url = self.url(key)
        headers = sigv4_headers(
            method, url, payload, region=self.region, credentials=self.credentials, now=datetime.now(UTC)
        )
        try:
            return await self.http.request(
                method, url, content=payload or None, headers=headers, timeout=S3_TIMEOUT_SECONDS
            )
        except httpx.HTTPError as error:
            message = f"log store: {method} {self.location(key)}: {type(error).__name__}: {error}"
            raise LogStoreError(redact(message, self.credentials.secrets()), permanent=False) from None

    def _error(self, method: str, key: str, response: httpx.Response) -> LogStoreError:
        status = response.status_code
        body = response.text[:MAX_ERROR_BODY_CHARS]
        message = f"log store: {method} {self.location(key)}: HTTP {status}: {body}"
        permanent = status < 500 and status not in _RETRYABLE_STATUSES
        return LogStoreError(redact(message, self.credentials.secrets()), permanent=permanent)

    async def put(self, key: str, data: bytes) -> str:
        response = await self._send("PUT", key, data)
        if not response.is_success:
            raise self._error("PUT", key, response)
        return self.location(key)

    async def get(self, key: str) -> bytes | None:
        response = await self._send("GET", key)
        if response.status_code == 404:
            return None
        if not response.is_success:
            raise self._error("GET", key, response)
        return response.content


def _s3_store(value: str, env: Mapping[str, str], http: httpx.AsyncClient) -> S3LogStore:
    bucket, _, prefix = value.removeprefix("s3://").partition("/")
    if not bucket:
        raise ValueError(f"{LOG_STORE_ENV}: no bucket in {value!r} (s3://BUCKET[/PREFIX])")
    access_key = env.get("AWS_ACCESS_KEY_ID", "").strip()
    secret_key = env.get("AWS_SECRET_ACCESS_KEY", "").strip()
    if not access_key or not secret_key:
        raise ValueError(f"{LOG_STORE_ENV} is an S3 bucket: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip() or DEFAULT_REGION
    endpoint = env.get(S3_ENDPOINT_ENV, "").strip() or f"https://s3.{region}.amazonaws.com"
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"{S3_ENDPOINT_ENV} must be an http(s) URL, got {endpoint!r}")
    prefix = prefix.strip("/")
    return S3LogStore(
        endpoint=endpoint,
        bucket=bucket,
        prefix=f"{prefix}/" if prefix else "",
        region=region,
        credentials=S3Credentials(access_key, secret_key, env.get("AWS_SESSION_TOKEN", "").strip()),
        http=http,
    )


def log_store_from_env(env: Mapping[str, str], http: httpx.AsyncClient) -> LogStore | None:
    """The store `RAYPILOT_LOG_STORE` names, None when it is unset; a ValueError naming the variable when
    its value (or the credentials an S3 store needs) cannot be used."""
    value = env.get(LOG_STORE_ENV, "").strip()
    if not value:
        return None
    if value.startswith("s3://"):
        return _s3_store(value, env, http)
    path = value.removeprefix("file://") if value.startswith("file://") else value
    if not path.startswith("/"):
        raise ValueError(
            f"{LOG_STORE_ENV} must be an absolute directory (/path or file:///path) or s3://BUCKET[/PREFIX],"
            f" got {value!r}"
        )
    return DirectoryLogStore(Path(path))
