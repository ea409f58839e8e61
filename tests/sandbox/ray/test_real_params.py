"""Table tests for turning a head's rayStartParams and env into a local `ray start`, and for the address and
auth headers a client of a head gets from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.ray.real_params import (
    DEFAULT_NUM_CPUS,
    DEFAULT_OBJECT_STORE_MEMORY,
    auth_token,
    ray_process_env,
    translate_ray_start_params,
)
from sandbox.ray.simulated import SimulatedDashboard

DEFAULTS = (f"--num-cpus={DEFAULT_NUM_CPUS}", f"--object-store-memory={DEFAULT_OBJECT_STORE_MEMORY}")


@pytest.mark.parametrize(
    ("params", "flags", "ignored"),
    [
        ({}, DEFAULTS, ()),
        (
            {"num-cpus": "0", "dashboard-host": "0.0.0.0", "block": "true", "metrics-export-port": "8080"},
            ("--num-cpus=0", f"--object-store-memory={DEFAULT_OBJECT_STORE_MEMORY}"),
            ("block", "dashboard-host", "metrics-export-port"),
        ),
        (
            {"num-gpus": "1", "object-store-memory": "200000000"},
            ("--num-cpus=4", "--num-gpus=1", "--object-store-memory=200000000"),
            (),
        ),
        # KubeRay users quote the JSON of `resources`; the quotes are YAML's, not Ray's.
        (
            {"resources": '"{\\"TPU\\": 4}"'},
            (*DEFAULTS[:1], *DEFAULTS[1:], '--resources={"TPU": 4}'),
            (),
        ),
        (
            {"port": "6379", "temp-dir": "/x", "no-such-flag": "1"},
            DEFAULTS,
            ("no-such-flag", "port", "temp-dir"),
        ),
        ({"include-log-monitor": "false"}, ("--include-log-monitor=false", *DEFAULTS), ()),
    ],
)
def test_translate_ray_start_params(
    params: dict[str, str], flags: tuple[str, ...], ignored: tuple[str, ...]
) -> None:
    translated = translate_ray_start_params(params)
    assert sorted(translated.flags) == sorted(flags)
    assert translated.ignored == ignored


def test_malformed_resources_fail_before_ray_starts() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        translate_ray_start_params({"resources": "{not json"})


def test_process_env_is_a_container_env_with_per_head_settings() -> None:
    env = ray_process_env(
        {"PATH": "/bin", "HOME": "/home/u", "RAY_ADDRESS": "elsewhere:6379", "RAY_AUTH_MODE": "token"},
        {"APP_VERSION": "v2", "PATH": "/venv/bin:/bin"},
        gcs_address="127.0.3.7:20001",
        dashboard_metric_port=20002,
        autoscaler_metric_port=20003,
    )
    assert env["PATH"] == "/venv/bin:/bin"  # the container's wins
    assert env["HOME"] == "/home/u"
    assert env["APP_VERSION"] == "v2"
    assert env["RAY_ADDRESS"] == "127.0.3.7:20001"  # this head, not the sandbox's
    assert env["RAY_AUTH_MODE"] == "disabled"  # the sandbox's own RAY_* do not leak in
    assert env["RAY_USAGE_STATS_ENABLED"] == "0"
    assert (env["DASHBOARD_METRIC_PORT"], env["AUTOSCALER_METRIC_PORT"]) == ("20002", "20003")


def test_container_env_can_turn_token_auth_on() -> None:
    env = ray_process_env(
        {},
        {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "t0k"},
        gcs_address="a:1",
        dashboard_metric_port=1,
        autoscaler_metric_port=2,
    )
    assert (env["RAY_AUTH_MODE"], env["RAY_AUTH_TOKEN"]) == ("token", "t0k")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "x"}, None),
        ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": " secret\n"}, "secret"),
        ({"RAY_AUTH_MODE": "TOKEN", "RAY_AUTH_TOKEN": "secret"}, "secret"),
    ],
)
def test_auth_token(env: dict[str, str], expected: str | None) -> None:
    assert auth_token(env) == expected


def test_auth_token_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n")
    assert auth_token({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file)}) == "from-file"


def test_token_mode_without_a_token_is_refused() -> None:
    with pytest.raises(ValueError, match="RAY_AUTH_TOKEN"):
        auth_token({"RAY_AUTH_MODE": "token"})


@pytest.mark.parametrize(
    ("env", "headers"),
    [
        ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "secret"}, {"Authorization": "Bearer secret"}),
        ({"RAY_AUTH_TOKEN": "secret"}, {}),  # token auth off: no header, whatever the env holds
    ],
    ids=["token auth", "no auth"],
)
def test_a_head_is_reached_at_its_dashboard_port_with_its_token(
    env: dict[str, str], headers: dict[str, str]
) -> None:
    ports = {"dashboard": 18265, "serve": 18000, "metrics": 18080}
    head = SimulatedDashboard("head", env, {}, host="10.0.0.7", ports=ports)
    assert head.dashboard_url == "http://10.0.0.7:18265"
    assert head.auth_headers == headers
