"""The certificates and keys a local control plane needs, made fresh for each one.

- a CA that signs everything below and that the API server trusts for client certificates;
- the API server's serving certificate, for 127.0.0.1 and localhost;
- an admin client certificate in the `system:masters` group (the kubeconfig the sandbox and tests use);
- the API server's client certificate for kubelets (node agents), with which it fetches container logs;
- the service-account key pair the API server signs tokens with and the controller manager issues them with.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ControlPlaneCerts:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    kubelet_client_cert: Path
    kubelet_client_key: Path
    service_account_key: Path  # private (RSA): signs tokens
    service_account_pub: Path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization is not None:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _certificate(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    addresses: tuple[str, ...] = (),
    names: tuple[str, ...] = (),
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if addresses or names:
        alternatives: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
        alternatives += [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
        builder = builder.add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_control_plane_certs(directory: Path, serving_addresses: tuple[str, ...]) -> ControlPlaneCerts:
    """Writes a fresh CA, serving, admin and service-account material into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = ControlPlaneCerts(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "serving.crt",
        serving_key=directory / "serving.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        kubelet_client_cert=directory / "kubelet-client.crt",
        kubelet_client_key=directory / "kubelet-client.key",
        service_account_key=directory / "sa.key",
        service_account_pub=directory / "sa.pub",
    )
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("raypilot-sandbox-ca")
    ca = _certificate(ca_name, ca_key.public_key(), ca_name, ca_key, ca=True)
    paths.ca_cert.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _write_key(paths.ca_key, ca_key)

    def issue(
        subject: x509.Name,
        cert_file: Path,
        key_file: Path,
        usage: x509.ObjectIdentifier,
        addresses: tuple[str, ...] = (),
        names: tuple[str, ...] = (),
    ) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(
            subject, key.public_key(), ca_name, ca_key, usage=usage, addresses=addresses, names=names
        )
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key_file, key)

    issue(
        _name("kube-apiserver"),
        paths.serving_cert,
        paths.serving_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        addresses=("127.0.0.1", *serving_addresses),
        names=(
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
    )
    client = ExtendedKeyUsageOID.CLIENT_AUTH
    issue(_name("raypilot-sandbox-admin", "system:masters"), paths.admin_cert, paths.admin_key, usage=client)
    issue(
        _name("kube-apiserver-kubelet-client"),
        paths.kubelet_client_cert,
        paths.kubelet_client_key,
        usage=client,
    )
    service_account = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(paths.service_account_key, service_account)
    paths.service_account_pub.write_bytes(
        service_account.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return paths
