"""Connection settings from the environment (docs/contract.md §2) and the Temporal client they make.

Secrets (the API key, TLS key) are read here and handed to the SDK only; they are never logged and never
enter workflow history.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig
from temporalio.service import TLSConfig

from raypilot.converter import raypilot_data_converter
from raypilot.tracing import client_interceptors, traces_exporter
from wire.metrics import histogram_buckets

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"
DEFAULT_TASK_QUEUE = "raypilot"
CONNECT_PATIENCE_SECONDS = 60.0

log = logging.getLogger(__name__)


class SettingsError(ValueError):
    """A setting has a value raypilot cannot use; the message names the variable."""


@dataclass(frozen=True)
class TemporalSettings:
    address: str = DEFAULT_ADDRESS
    namespace: str = DEFAULT_NAMESPACE
    task_queue: str = DEFAULT_TASK_QUEUE
    api_key: str | None = field(default=None, repr=False)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    metrics_bind: str | None = None
    # The standard OpenTelemetry variables (OTEL_*): tracing is on when they ask for it (raypilot.tracing).
    otel: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TemporalSettings:
        env = os.environ if env is None else env

        def path(name: str) -> Path | None:
            value = env.get(name, "").strip()
            return Path(value) if value else None

        otel = {name: value for name, value in env.items() if name.startswith("OTEL_")}
        try:
            traces_exporter(otel)
        except ValueError as error:
            raise SettingsError(str(error)) from None
        return cls(
            address=env.get("TEMPORAL_ADDRESS", "").strip() or DEFAULT_ADDRESS,
            namespace=env.get("TEMPORAL_NAMESPACE", "").strip() or DEFAULT_NAMESPACE,
            task_queue=env.get("RAYPILOT_TASK_QUEUE", "").strip() or DEFAULT_TASK_QUEUE,
            api_key=env.get("TEMPORAL_API_KEY", "").strip() or None,
            tls_cert=path("TEMPORAL_TLS_CERT"),
            tls_key=path("TEMPORAL_TLS_KEY"),
            tls_ca=path("TEMPORAL_TLS_CA"),
            metrics_bind=metrics_bind_address(env.get("RAYPILOT_METRICS_PORT", "")),
            otel=otel,
        )

    def tls_config(self) -> TLSConfig | bool:
        """mTLS when a client certificate is given; plain TLS for an API key (Temporal Cloud); else none."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise SettingsError("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY must be set together")
        if self.tls_cert is None and self.tls_ca is None:
            return self.api_key is not None
        return TLSConfig(
            client_cert=_read("TEMPORAL_TLS_CERT", self.tls_cert),
            client_private_key=_read("TEMPORAL_TLS_KEY", self.tls_key),
            server_root_ca_cert=_read("TEMPORAL_TLS_CA", self.tls_ca),
        )


# How rustls and hyper report a server that refuses the client's certificate: a TLS alert, or the connection
# closed, reset or a broken pipe right after the handshake (which one depends on timing; hyper's
# `Canceled, "connection closed"` on the first call too).
_TLS_FAILURE_SIGNS = (
    "tls", "certificate", "handshake", "close_notify", "connectionreset", "connection reset", "unexpectedeof",
    "broken pipe", "brokenpipe", "connection closed",
)  # fmt: skip


def connection_failure(settings: TemporalSettings, error: str) -> str:
    """What to tell a user whose connection to Temporal failed. Over TLS, a server that refuses the client's
    certificate just closes the connection (TLS 1.3), so the SDK's error names no certificate: say which
    settings to check."""
    message = f"cannot reach Temporal at {settings.address}: {error}"
    uses_tls = settings.api_key is not None or settings.tls_cert is not None or settings.tls_ca is not None
    if uses_tls and any(sign in error.lower() for sign in _TLS_FAILURE_SIGNS):
        message += (
            "\nThe server closed the TLS connection: check that TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY are"
            " a client certificate and key the server trusts, that TEMPORAL_TLS_CA signed the server's"
            " certificate, and for Temporal Cloud that TEMPORAL_API_KEY is valid."
        )
    return message


def metrics_bind_address(value: str) -> str | None:
    """`RAYPILOT_METRICS_PORT` as a bind address: "9464" binds every interface (for a scraper in the cluster),
    "127.0.0.1:9464" binds just that address; empty means no metrics endpoint."""
    value = value.strip()
    if not value:
        return None
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"RAYPILOT_METRICS_PORT must be a port number or HOST:PORT, got {value!r}")
    return f"{host or '0.0.0.0'}:{port}"


def _read(variable: str, path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as err:
        raise SettingsError(f"{variable}: cannot read {path}: {err.strerror}") from err


def make_runtime(settings: TemporalSettings) -> Runtime | None:
    """A runtime exporting the SDK's and raypilot's metrics (`wire.metrics`) for Prometheus when asked to;
    None keeps the SDK default."""
    if settings.metrics_bind is None:
        return None
    prometheus = PrometheusConfig(
        bind_address=settings.metrics_bind, histogram_bucket_overrides=histogram_buckets()
    )
    return Runtime(telemetry=TelemetryConfig(metrics=prometheus))


async def connect(settings: TemporalSettings, runtime: Runtime | None = None) -> Client:
    """A client with the pydantic data converter, which every raypilot workflow and activity relies on."""
    return await Client.connect(
        settings.address,
        namespace=settings.namespace,
        api_key=settings.api_key,
        tls=settings.tls_config(),
        data_converter=raypilot_data_converter,
        runtime=runtime,
        interceptors=client_interceptors(settings.otel),
    )


async def connect_with_retry(
    settings: TemporalSettings, runtime: Runtime | None = None, patience: float = CONNECT_PATIENCE_SECONDS
) -> Client:
    """Connects, retrying with back-off while the frontend is not up yet (a worker pod or `make dev` may
    start before the server); gives up after `patience` seconds with the last error."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    delay = 0.2
    while True:
        try:
            return await connect(settings, runtime)
        except RuntimeError as err:  # the SDK reports an unreachable server as RuntimeError
            if loop.time() + delay > deadline:
                raise
            log.info("Temporal at %s not reachable yet (%s); retrying", settings.address, err)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
