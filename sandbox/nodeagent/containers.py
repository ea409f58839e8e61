"""Starting and stopping one container of a pod as a local process in the pod's network namespace.

There are no images: a container runs its `command + args` (KubeRay always gives Ray containers a command),
with this virtualenv standing in for a Ray image (its `ray` and `python` first on PATH, also for login
shells, which reset PATH from /etc/profile: the pod's HOME has a profile that puts them back), and
`sandbox.images` standing in for programs of other images. Each pod has its own short temporary directory
(Ray's session sockets must fit the 107-byte limit of a socket path), so Ray heads of different pods never
share /tmp/ray. Output goes to `<pod dir>/<container>.log` (the run before a restart's to
`<container>.previous.log`). A process runs in its own session and is stopped
by its process group: SIGTERM, then SIGKILL after the grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.images import stand_in_argv
from sandbox.nodeagent.env import ObjectReader, container_argv, container_environment
from sandbox.nodeagent.network import PodNetwork
from sandbox.nodeagent.serviceaccount import API_ENV, bind_service_account, mounts_service_account
from sandbox.ray.simulated_timings import TIMINGS_ENV

__all__ = [
    "ContainerProcess",
    "PodFiles",
    "RayImage",
    "container_env",
    "simulated_ray_image",
    "start_container",
]

VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ContainerConfigError(RuntimeError):
    """The container cannot be started as specified (CreateContainerConfigError / CreateContainerError)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class RayImage:
    """What stands in for a Ray image: the directories of its programs, first on PATH, and variables its
    containers see. The default is this virtualenv (real Ray); `simulated_ray_image` puts a `ray` of
    simulated Ray (sandbox.images.simulated_ray) before it."""

    bin_dirs: tuple[Path, ...] = (VENV_BIN,)
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return ":".join(str(directory) for directory in self.bin_dirs)


def simulated_ray_image(directory: Path, timings: str) -> RayImage:
    """A `ray` program in `directory` that runs simulated Ray (`timings`: "fast" or "default")."""
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / "ray"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sandbox.images.simulated_ray "$@"\n')
    program.chmod(0o755)
    return RayImage((directory, VENV_BIN), {TIMINGS_ENV: timings})


@dataclass(frozen=True)
class PodFiles:
    """Where a pod's files live: logs and HOME under the agent's directory, temporary files under /tmp; and
    the image its containers run."""

    directory: Path
    tmp: Path
    image: RayImage = RayImage()

    @property
    def home(self) -> Path:
        return self.directory / "home"

    @property
    def service_account(self) -> Path:
        return self.directory / "serviceaccount"

    def log(self, container: str) -> Path:
        return self.directory / f"{container}.log"

    def previous_log(self, container: str) -> Path:
        """The log of the container's run before its last restart."""
        return self.directory / f"{container}.previous.log"

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.remove_tmp()  # an earlier pod's, on the same network slot
        self.tmp.mkdir(parents=True)
        profile = f'export PATH="{self.image.path}:$PATH"\n'
        for name in (".bash_profile", ".profile"):
            (self.home / name).write_text(profile)

    def remove_tmp(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def container_env(
    reader: ObjectReader, pod: Mapping[str, Any], container: Mapping[str, Any], files: PodFiles
) -> dict[str, str]:
    """What the container's processes see: a Ray image's basics and the `kubernetes` Service's address, then
    the container's own variables."""
    base = {
        **API_ENV,
        "PATH": f"{files.image.path}:{SYSTEM_PATH}",
        "HOME": str(files.home),
        "HOSTNAME": str((pod.get("metadata") or {}).get("name", "")),
        "TMPDIR": str(files.tmp),
        "RAY_TMPDIR": str(files.tmp),
        "LANG": "C.UTF-8",
        **files.image.env,
    }
    return {**base, **container_environment(reader, pod, container)}


@dataclass
class ContainerProcess:
    name: str
    process: asyncio.subprocess.Process

    async def wait(self) -> int:
        """The exit code as a container runtime reports it (128 + signal for a killed process)."""
        code = await self.process.wait()
        return 128 - code if code < 0 else code

    async def stop(self, grace_s: float) -> None:
        if self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), grace_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()


async def start_container(
    container: Mapping[str, Any], env: Mapping[str, str], network: PodNetwork, files: PodFiles
) -> ContainerProcess:
    argv = stand_in_argv(container, container_argv(container, env))
    if not argv:
        raise ContainerConfigError(
            "CreateContainerError", "the node agent runs a container's command: this container has none"
        )
    if mounts_service_account(container):
        argv = bind_service_account(files.service_account, argv)
    # An image's working directory does not exist here: the pod's HOME stands in for it.
    workdir = files.home
    name = str(container.get("name", ""))
    if files.log(name).exists():  # a restart: the last run's output is the previous log
        files.log(name).replace(files.previous_log(name))
    with files.log(name).open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            "ip",
            "netns",
            "exec",
            network.netns,
            *argv,
            env=dict(env),
            cwd=workdir,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    return ContainerProcess(name, process)
