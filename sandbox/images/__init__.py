"""Stand-ins for programs of container images that are not Ray (the sandbox runs a container's command as a
local process, and such a program does not exist on this machine): `stand_in_argv` maps an image's program to
a Python module here that does the same over HTTP."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

# (image repository, program) -> module run in its place with the same arguments.
STAND_INS: Final = {("quay.io/kuberay/submitter", "/submitter"): "sandbox.images.kuberay_submitter"}


def image_repository(image: str) -> str:
    """`quay.io/kuberay/submitter` of `quay.io/kuberay/submitter:v1.5.1` (or of a `@sha256:` reference)."""
    name = image.split("@", 1)[0]
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > last_slash else name


def stand_in_argv(container: Mapping[str, Any], argv: Sequence[str]) -> list[str]:
    """The argv to run for a container: its own, or the stand-in of its image's program."""
    if argv:
        module = STAND_INS.get((image_repository(str(container.get("image", ""))), argv[0]))
        if module is not None:
            return [sys.executable, "-m", module, *argv[1:]]
    return list(argv)
