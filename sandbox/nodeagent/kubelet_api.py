"""The node's HTTPS API, the part of a kubelet's the API server calls: container logs (`kubectl logs`, the
pods/log subresource), on the port the Node reports in `status.daemonEndpoints`.

- The serving certificate is obtained as a kubelet that rotates server certificates obtains it: a
  CertificateSigningRequest to the `kubernetes.io/kubelet-serving` signer for `system:node:<node>` with the
  node's address, signed by kube-controller-manager. The agent approves it itself (it holds the admin
  credentials); in a cluster an approver would.
- A client is answered only with a certificate of the cluster's CA (the API server presents its kubelet
  client certificate). A kubelet would also ask the API server whether that user may read nodes/log.
- A log is what the container wrote, stdout and stderr in one file, of its current run only; `previous=true`
  reads the run before its last restart. `tailLines`, `limitBytes` and `follow` are honoured. No time is kept
  per line, so `timestamps`, `sinceSeconds` and `sinceTime` are refused (400) rather than ignored.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

__all__ = ["KUBELET_PORT", "ContainerLog", "LogLookup", "NodeApi", "request_serving_certificate", "tail"]

KUBELET_PORT = 10250
SIGNER = "kubernetes.io/kubelet-serving"
CERTIFICATE_SECONDS = 7 * 24 * 3600
SIGNED_WITHIN_S = 60.0
FOLLOW_POLL_S = 0.2
READ_CHUNK = 64 * 1024
UNSUPPORTED = ("timestamps", "sinceSeconds", "sinceTime")


@dataclass(frozen=True)
class ContainerLog:
    """A container's log file, and whether the container is still writing to it (a follow waits for more)."""

    path: Path
    running: Callable[[], bool]


class LogLookup(Protocol):
    def container_log(self, namespace: str, pod: str, container: str, previous: bool) -> ContainerLog | str:
        """The log, or why there is none (the message a kubelet would give)."""


def request_serving_certificate(
    api: k8s.ApiClient, node: str, address: str, directory: Path
) -> tuple[Path, Path]:
    """Asks the cluster's kubelet-serving signer for a certificate for `node` at `address`, approves the
    request and waits for it to be signed; returns the (certificate, key) files written to `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
        ]
    )
    alternatives = x509.SubjectAlternativeName(
        [x509.DNSName(node), x509.IPAddress(ipaddress.ip_address(address))]
    )
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .add_extension(alternatives, critical=False)
        .sign(key, hashes.SHA256())
    )
    certificates = k8s.CertificatesV1Api(api)
    created = certificates.create_certificate_signing_request(
        k8s.V1CertificateSigningRequest(
            metadata=k8s.V1ObjectMeta(generate_name=f"{node}-serving-"),
            spec=k8s.V1CertificateSigningRequestSpec(
                request=base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                signer_name=SIGNER,
                usages=["digital signature", "server auth"],
                expiration_seconds=CERTIFICATE_SECONDS,
            ),
        )
    )
    assert created.metadata is not None
    name = str(created.metadata.name)
    created.status = k8s.V1CertificateSigningRequestStatus(
        conditions=[
            k8s.V1CertificateSigningRequestCondition(
                type="Approved",
                status="True",
                reason="NodeAgentServing",
                message="the node agent's serving certificate for its own address",
            )
        ]
    )
    certificates.replace_certificate_signing_request_approval(name, created)
    deadline = time.monotonic() + SIGNED_WITHIN_S
    while True:
        status = certificates.read_certificate_signing_request(name).status
        if status is not None and status.certificate:
            break
        conditions = (status.conditions if status is not None else None) or []
        failed = [c for c in conditions if c.type in ("Denied", "Failed")]
        if failed:
            raise RuntimeError(f"serving certificate {name}: {failed[0].type}: {failed[0].message}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"serving certificate {name}: not signed in {SIGNED_WITHIN_S:.0f} s")
        time.sleep(0.2)
    directory.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = directory / "serving.crt", directory / "serving.key"
    cert_file.write_bytes(base64.b64decode(status.certificate))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_file.chmod(0o600)
    return cert_file, key_file


def tail(data: bytes, lines: int | None) -> bytes:
    """The last `lines` lines of `data` (a last line without its newline counts as one)."""
    if lines is None:
        return data
    if lines <= 0:
        return b""
    kept = data.splitlines(keepends=True)[-lines:]
    return b"".join(kept)


def _count(query: dict[str, str], name: str) -> int | None:
    value = query.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name}: {value!r} is not a number\n") from None
    if number < 0:
        raise web.HTTPBadRequest(text=f"{name}: must be at least 0\n")
    return number


class NodeApi:
    """The HTTPS server at (address, port); `ca_file` holds the CA its clients' certificates must chain to."""

    def __init__(self, address: str, port: int, ca_file: str, logs: LogLookup) -> None:
        self.address, self.port, self.ca_file, self.logs = address, port, ca_file, logs
        self._runner: web.AppRunner | None = None

    async def start(self, cert_file: Path, key_file: Path) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=self.ca_file)
        context.load_cert_chain(str(cert_file), str(key_file))
        context.verify_mode = ssl.CERT_REQUIRED
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        # The node is going away when this stops: a log stream the API server still holds open (a follow)
        # is cut at once rather than waited on for aiohttp's default minute.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.address, self.port, ssl_context=context).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        refused = [name for name in UNSUPPORTED if name in query and query[name] not in ("", "false")]
        if refused:
            raise web.HTTPBadRequest(
                text=f"{', '.join(refused)}: raypilot's node agent keeps no time per log line\n"
            )
        lines, limit = _count(query, "tailLines"), _count(query, "limitBytes")
        follow, previous = query.get("follow") == "true", query.get("previous") == "true"
        info = request.match_info
        found = self.logs.container_log(info["namespace"], info["pod"], info["container"], previous)
        if isinstance(found, str):
            raise web.HTTPBadRequest(text=found + "\n")
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        left = limit
        with found.path.open("rb") as file:
            head = tail(file.read(), lines)
            left = await _send(response, head, left)
            while follow and left != 0:
                more = file.read(READ_CHUNK)
                if more:
                    left = await _send(response, more, left)
                elif not found.running():
                    # What the container wrote between the last read and its end.
                    await _send(response, file.read(), left)
                    break
                else:
                    await asyncio.sleep(FOLLOW_POLL_S)
        await response.write_eof()
        return response


async def _send(response: web.StreamResponse, data: bytes, left: int | None) -> int | None:
    """Writes `data` up to the bytes still allowed (`left`, None: no limit); returns what is left."""
    if left is not None:
        data = data[:left]
        left -= len(data)
    if data:
        await response.write(data)
    return left
