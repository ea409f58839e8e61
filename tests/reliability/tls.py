"""A TLS front for the Temporal dev server (which has no TLS options of its own): certificates made at test
time, and a TLS-terminating TCP proxy on loopback that requires a client certificate of its CA (mTLS, as a
self-hosted Temporal with `requireClientAuth` or Temporal Cloud does); and a gRPC front on TLS that checks an
API key (`authorization: Bearer`), as Temporal Cloud's API-key endpoints do."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    pair = Pair(directory / f"{stem}.pem", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return pair


Authority = tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey]


def certificate_authority(directory: Path, name: str) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return _write(directory, name, cert, key), cert, key


def issued(directory: Path, name: str, ca: Authority, server: bool) -> Pair:
    """A leaf certificate signed by `ca`: for 127.0.0.1 and localhost when `server`, else a client's."""
    _, ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if server:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return _write(directory, name, builder.sign(ca_key, hashes.SHA256()), key)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def tls_front(target: str, server: Pair, client_ca: Path) -> AsyncIterator[str]:
    """Serves TLS (ALPN h2, client certificate of `client_ca` required) on 127.0.0.1 and forwards the bytes
    to `target` (host:port, plaintext gRPC); yields its own address."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(server.cert, server.key)
    context.load_verify_locations(client_ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.set_alpn_protocols(["h2"])
    host, port = target.rsplit(":", 1)
    pipes: set[asyncio.Task[None]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        for task in (_pipe(reader, upstream_writer), _pipe(upstream_reader, writer)):
            pipe = asyncio.create_task(task)
            pipes.add(pipe)
            pipe.add_done_callback(pipes.discard)

    listener = await asyncio.start_server(connection, "127.0.0.1", 0, ssl=context)
    try:
        yield f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        for pipe in list(pipes):
            pipe.cancel()
        await listener.wait_closed()


@contextlib.asynccontextmanager
async def api_key_front(target: str, server: Pair, api_key: str) -> AsyncIterator[str]:
    """Serves gRPC over TLS (no client certificate) on 127.0.0.1, as Temporal Cloud's API-key endpoints do:
    a call without `authorization: Bearer <api_key>` is refused UNAUTHENTICATED, any other is forwarded to
    `target` (plaintext gRPC) without that header; yields its own address. Every Temporal call is unary."""
    upstream = grpc.aio.insecure_channel(target)
    wanted = f"Bearer {api_key}"

    def forwarding(
        method: str,
    ) -> Callable[[bytes, grpc.aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]:
        call = upstream.unary_unary(method)

        async def forward(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
            metadata = tuple(context.invocation_metadata() or ())
            if dict(metadata).get("authorization") != wanted:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "Request unauthorized: invalid API key")
            passed = tuple((key, value) for key, value in metadata if key != "authorization")
            try:
                answer: bytes = await call(request, metadata=passed, timeout=context.time_remaining())
            except grpc.aio.AioRpcError as error:
                await context.abort(error.code(), error.details() or "")
            return answer

        return forward

    class Everything(grpc.GenericRpcHandler):
        def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
            method = details.method
            name = method if isinstance(method, str) else bytes(method).decode()
            return grpc.unary_unary_rpc_method_handler(forwarding(name))

    front = grpc.aio.server(handlers=[Everything()])
    credentials = grpc.ssl_server_credentials([(server.key.read_bytes(), server.cert.read_bytes())])
    port = front.add_secure_port("127.0.0.1:0", credentials)
    await front.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await front.stop(grace=None)
        await upstream.close()
