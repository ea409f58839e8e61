"""Pure translation of a RayCluster head's `rayStartParams` and container env into a local `ray start`.

KubeRay turns each `rayStartParams` entry `key: value` into `--key=value` (`"true"` for switches). Locally
some of them must not pass: the sandbox owns every port, the bind addresses, the temp dir and blocking, so
those are dropped (and reported, so the caller can tell the user); resource declarations pass unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_NUM_CPUS = "4"  # logical CPUs only; enough for a few 1-CPU Serve replicas of KubeRay's samples
DEFAULT_OBJECT_STORE_MEMORY = str(100 * 1000 * 1000)  # bytes; Ray's minimum is 75 MB

# Parameters the sandbox owns: ports, addresses, directories, process control, cgroups.
SANDBOX_OWNED_PARAMS = frozenset(
    {
        "address",
        "autoscaling-config",
        "block",
        "cgroup-path",
        "dashboard-agent-grpc-port",
        "dashboard-agent-listen-port",
        "dashboard-grpc-port",
        "dashboard-host",
        "dashboard-port",
        "disable-usage-stats",
        "enable-resource-isolation",
        "head",
        "include-dashboard",
        "max-worker-port",
        "metrics-export-port",
        "min-worker-port",
        "node-ip-address",
        "node-manager-port",
        "object-manager-port",
        "object-spilling-directory",
        "plasma-directory",
        "port",
        "proxy-server-url",
        "ray-client-server-port",
        "ray-debugger-external",
        "redis-password",
        "runtime-env-agent-port",
        "system-reserved-cpu",
        "system-reserved-memory",
        "temp-dir",
        "worker-port-list",
    }
)

# Parameters that mean the same thing on one machine as in a pod.
VALUE_PARAMS = frozenset(
    {
        "num-cpus",
        "num-gpus",
        "resources",
        "object-store-memory",
        "include-log-monitor",
        "log-style",
        "log-color",
    }
)


@dataclass(frozen=True)
class RayStartParams:
    """The flags to add to `ray start --head`, and the keys that were not passed on."""

    flags: tuple[str, ...]
    ignored: tuple[str, ...] = field(default=())


def _unquote(value: str) -> str:
    # KubeRay users often write resources as '"{\"GPU\": 1}"': a JSON string inside quotes.
    stripped = value.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
        return stripped[1:-1].replace('\\"', '"')
    return stripped


def translate_ray_start_params(params: Mapping[str, str]) -> RayStartParams:
    """Map `rayStartParams` to `ray start` flags; sandbox-owned and unknown keys are ignored.

    Defaults are added for num-cpus and object-store-memory when absent: a head that declared none would
    otherwise claim every core and 30% of RAM of a shared machine.
    """
    values: dict[str, str] = {
        "num-cpus": DEFAULT_NUM_CPUS,
        "object-store-memory": DEFAULT_OBJECT_STORE_MEMORY,
    }
    ignored: list[str] = []
    for key, raw in params.items():
        if key not in VALUE_PARAMS:
            ignored.append(key)
            continue
        value = _unquote(str(raw))
        if key == "resources":
            json.loads(value)  # a malformed value must fail here, not as a silent Ray startup error
        values[key] = value
    flags = tuple(f"--{key}={value}" for key, value in sorted(values.items()))
    return RayStartParams(flags=flags, ignored=tuple(sorted(ignored)))


def ray_process_env(
    inherited: Mapping[str, str],
    container_env: Mapping[str, str],
    *,
    gcs_address: str,
    dashboard_metric_port: int,
    autoscaler_metric_port: int,
) -> dict[str, str]:
    """The environment of `ray start`: like a container's, it does not leak the sandbox's own RAY_* vars.

    The container env (the head template's) wins over the inherited one; then the sandbox pins what must be
    per-head (fixed metric ports that Ray would otherwise share between heads, RAY_ADDRESS of this head as
    KubeRay sets it) and what must be quiet (usage stats). Token auth stays off unless the container asks
    for it, so a stray ~/.ray/auth_token cannot switch it on.
    """
    env = {key: value for key, value in inherited.items() if not key.startswith("RAY_")}
    env.update(container_env)
    env.setdefault("RAY_AUTH_MODE", "disabled")
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_ADDRESS"] = gcs_address
    env["DASHBOARD_METRIC_PORT"] = str(dashboard_metric_port)
    env["AUTOSCALER_METRIC_PORT"] = str(autoscaler_metric_port)
    return env


def auth_token(env: Mapping[str, str]) -> str | None:
    """The bearer token clients need for this head, or None when token auth is off.

    Raises ValueError when token auth is on but no token is given: Ray would then generate one into the
    user's ~/.ray, which a sandbox must not touch.
    """
    if env.get("RAY_AUTH_MODE", "").lower() != "token":
        return None
    token = env.get("RAY_AUTH_TOKEN")
    if token:
        return token.strip()
    path = env.get("RAY_AUTH_TOKEN_PATH")
    if path:
        with open(path, encoding="utf-8") as token_file:
            return token_file.read().strip()
    raise ValueError("RAY_AUTH_MODE=token needs RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH in the head's env")
