"""Running a pod's container as a local process (shared by the Job controller and the head pods' sidecars).

A container with a command becomes `command + args` in exec form (`$(VAR)` expanded), with the container's
environment on top of the sandbox's, the virtualenv's bin first on PATH (as in a Ray image, `ray` and
`python` are the project's), its cwd a per-pod directory and stdout/stderr appended to a log file there.
It runs in its own session and is stopped by PID, never by name.

Names a pod uses that do not resolve on this machine are rewritten in env values and argv: in-cluster
Service DNS names (to the Service's clusterIP) and, for a container sharing a Ray head pod's network
namespace, `127.0.0.1` / `localhost` (to the pod IP, where the head's ports are forwarded).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from sandbox.controllers.job_pods import rewrite_service_hosts
from sandbox.controllers.raycluster_env import container_argv, container_environment
from sandbox.images import stand_in_argv
from sandbox.store import Store

_LOOPBACK_HOST = re.compile(r"(?<![A-Za-z0-9.-])(?:127\.0\.0\.1|localhost)(?![A-Za-z0-9-]|\.[A-Za-z0-9])")


def rewrite_loopback(text: str, pod_ip: str) -> str:
    """`127.0.0.1` and `localhost` as host names become the pod IP: inside a pod they mean the pod itself."""
    return _LOOPBACK_HOST.sub(pod_ip, text)


def exit_code_of(returncode: int) -> int:
    """A process killed by a signal is reported as the container runtime does (128 + signal)."""
    return 128 - returncode if returncode < 0 else returncode


def service_address(store: Store, namespace: str, name: str) -> str | None:
    """Where `<name>.<namespace>.svc` answers here: its clusterIP, or (headless) the IP of a selected pod."""
    service = store.try_get("v1", "Service", namespace, name)
    if service is None:
        return None
    cluster_ip = (service.get("spec") or {}).get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        return str(cluster_ip)
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return None
    label_selector = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    for pod in store.list("v1", "Pod", namespace, label_selector=label_selector):
        if (pod.get("status") or {}).get("podIP"):
            return str(pod["status"]["podIP"])
    return None


class PodProcessLauncher:
    """Builds a container's environment and argv as the sandbox runs them, and starts the process."""

    def __init__(self, store: Store, extra_env: Mapping[str, str] | None = None) -> None:
        self.store = store
        self.extra_env = dict(extra_env or {})

    def rewrite(self, namespace: str, text: str, pod_ip: str | None = None) -> str:
        text = rewrite_service_hosts(text, lambda ns, name: service_address(self.store, ns, name))
        return rewrite_loopback(text, pod_ip) if pod_ip else text

    def environment(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], pod_ip: str | None = None
    ) -> dict[str, str]:
        """Raises EnvResolutionError when a referenced Secret/ConfigMap/key is missing."""
        declared = container_environment(self.store, pod, container)
        namespace = pod["metadata"]["namespace"]
        env = {**os.environ, **self.extra_env, "HOSTNAME": pod["metadata"]["name"]}
        env.update({name: self.rewrite(namespace, value, pod_ip) for name, value in declared.items()})
        venv_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH", os.defpath)])
        return env

    def argv(
        self, namespace: str, container: Mapping[str, Any], env: Mapping[str, str], pod_ip: str | None = None
    ) -> list[str]:
        words = [self.rewrite(namespace, word, pod_ip) for word in container_argv(container, env)]
        return stand_in_argv(container, words)

    async def start(
        self, argv: list[str], env: Mapping[str, str], cwd: Path, log_path: Path
    ) -> asyncio.subprocess.Process:
        """Starts the process in its own session; raises OSError/ValueError when it cannot be started."""
        with _open_log(cwd, log_path) as log_file:
            return await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )


def _open_log(cwd: Path, log_path: Path) -> BinaryIO:
    cwd.mkdir(parents=True, exist_ok=True)
    return log_path.open("ab")


async def kill_process_group(process: asyncio.subprocess.Process, grace_s: float) -> None:
    """SIGTERM to the process's group, SIGKILL after the grace period (by PID, never by name)."""
    if process.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            await asyncio.wait_for(process.wait(), grace_s)
            return
        except TimeoutError:
            continue
