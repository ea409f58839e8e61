from __future__ import annotations

from pathlib import Path

import pytest

from raypilot.settings import SettingsError, TemporalSettings, connection_failure, metrics_bind_address


def test_defaults_follow_the_contract() -> None:
    settings = TemporalSettings.from_env({})
    assert (settings.address, settings.namespace, settings.task_queue) == (
        "localhost:7233",
        "default",
        "raypilot",
    )
    assert settings.api_key is None
    assert settings.tls_config() is False
    assert settings.metrics_bind is None


def test_environment_overrides_each_setting() -> None:
    settings = TemporalSettings.from_env(
        {
            "TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
            "TEMPORAL_NAMESPACE": "ns.acct",
            "RAYPILOT_TASK_QUEUE": "ray-prod",
            "TEMPORAL_API_KEY": "secret-key",
        }
    )
    assert settings.address == "ns.acct.tmprl.cloud:7233"
    assert settings.namespace == "ns.acct"
    assert settings.task_queue == "ray-prod"
    # An API key means Temporal Cloud, which needs TLS.
    assert settings.tls_config() is True


def test_api_key_never_shows_in_repr() -> None:
    settings = TemporalSettings.from_env({"TEMPORAL_API_KEY": "secret-key"})
    assert "secret-key" not in repr(settings)


def test_mtls_reads_certificate_files(tmp_path: Path) -> None:
    cert, key, ca = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca.pem"
    cert.write_bytes(b"CERT")
    key.write_bytes(b"KEY")
    ca.write_bytes(b"CA")
    settings = TemporalSettings.from_env(
        {"TEMPORAL_TLS_CERT": str(cert), "TEMPORAL_TLS_KEY": str(key), "TEMPORAL_TLS_CA": str(ca)}
    )
    tls = settings.tls_config()
    assert not isinstance(tls, bool)
    assert (tls.client_cert, tls.client_private_key, tls.server_root_ca_cert) == (b"CERT", b"KEY", b"CA")


def test_certificate_without_key_is_rejected(tmp_path: Path) -> None:
    settings = TemporalSettings.from_env({"TEMPORAL_TLS_CERT": str(tmp_path / "c.pem")})
    with pytest.raises(SettingsError, match="TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY must be set together"):
        settings.tls_config()


def test_unreadable_certificate_names_the_variable(tmp_path: Path) -> None:
    settings = TemporalSettings.from_env(
        {"TEMPORAL_TLS_CERT": str(tmp_path / "absent.pem"), "TEMPORAL_TLS_KEY": str(tmp_path / "k.pem")}
    )
    with pytest.raises(SettingsError, match="TEMPORAL_TLS_CERT: cannot read"):
        settings.tls_config()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", None),
        ("9464", "0.0.0.0:9464"),
        ("127.0.0.1:9464", "127.0.0.1:9464"),
        (" 9090 ", "0.0.0.0:9090"),
    ],
)
def test_metrics_bind_address(value: str, expected: str | None) -> None:
    assert metrics_bind_address(value) == expected


@pytest.mark.parametrize("value", ["http", "0", "70000", "host:"])
def test_metrics_bind_address_rejects_non_ports(value: str) -> None:
    with pytest.raises(SettingsError, match="RAYPILOT_METRICS_PORT"):
        metrics_bind_address(value)


@pytest.mark.parametrize(
    ("env", "error", "hinted"),
    [
        ({"TEMPORAL_TLS_CA": "ca.pem"}, "peer closed connection without sending TLS close_notify", True),
        ({"TEMPORAL_API_KEY": "k"}, "invalid peer certificate: UnknownIssuer", True),
        ({"TEMPORAL_TLS_CA": "ca.pem"}, "transport error: hyper::Error(Io, Kind(ConnectionReset))", True),
        ({"TEMPORAL_TLS_CA": "ca.pem"}, "error sending request: Broken pipe (os error 32)", True),
        (
            {"TEMPORAL_TLS_CA": "ca.pem"},
            'call error after connection: Status { code: Cancelled, message: "operation was canceled", '
            'source: Some(tonic::transport::Error(Transport, hyper::Error(Canceled, "connection closed"))) }',
            True,
        ),
        ({"TEMPORAL_TLS_CA": "ca.pem"}, "Connection refused (os error 111)", False),
        ({}, "peer closed connection without sending TLS close_notify", False),
    ],
    ids=[
        "mtls refused",
        "api key, unknown issuer",
        "mtls reset",
        "mtls broken pipe",
        "mtls connection closed",
        "not a tls failure",
        "no tls configured",
    ],
)
def test_a_tls_failure_names_the_settings_to_check(env: dict[str, str], error: str, hinted: bool) -> None:
    message = connection_failure(TemporalSettings.from_env({"TEMPORAL_ADDRESS": "h:7233", **env}), error)
    assert message.startswith(f"cannot reach Temporal at h:7233: {error}")
    assert ("TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY" in message) is hinted
