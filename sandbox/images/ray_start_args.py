"""`ray start`'s command line as the simulated `ray` program reads it: shared by the program itself
(simulated_ray.py) and the head and worker processes it starts (simulated_ray_node.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def start_params(argv: Sequence[str]) -> dict[str, str]:
    """`ray start`'s options by name without dashes: `--key=value` and `--key value` give the value, a flag
    alone gives ""."""
    params: dict[str, str] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--"):
            continue
        name, equals, value = token[2:].partition("=")
        if not equals and index < len(argv) and not argv[index].startswith("--"):
            value = argv[index]
            index += 1
        params[name] = value
    return params


def gcs_address(params: Mapping[str, str]) -> tuple[str, int]:
    """The head's host and GCS port of `--address HOST:PORT`."""
    host, _, port = params.get("address", "").rpartition(":")
    return host, int(port or 6379)
