"""A Ray Serve app that says which version and which replica answered: `sandbox.apps.versioned:app`.

GET on any path under its route prefix answers JSON
`{"version": ..., "replica": <replica id>, "rank": <global rank or null>, "world_size": <int or null>}`.
The version is `user_config["version"]` when the deployment has one, else the env var APP_VERSION of the Ray
head (Ray workers inherit the environment of `ray start`), else "unknown". Tests use it to tell v1 from v2
traffic and to read replica ranks; the simulated dashboard answers with the same shape. `?work_s=N` makes
it answer N seconds later (a long request, for the drained-deletion tests), and `?hold_until=<path>` once
that file exists (sandbox/apps/holds.py), as the simulated app does.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

from sandbox.apps.holds import HOLD_PARAM, held_until

UNKNOWN_VERSION = "unknown"


def _rank_number(rank: Any) -> int | None:
    # Ray 2.50-2.51 give an int; 2.52+ a ReplicaRank(rank, node_rank, local_rank).
    if rank is None or isinstance(rank, int):
        return rank
    number = getattr(rank, "rank", None)
    return number if isinstance(number, int) else None


class _Versioned:
    def __init__(self) -> None:
        self._configured_version: str | None = None

    def reconfigure(self, user_config: dict[str, Any]) -> None:
        version = (user_config or {}).get("version")
        self._configured_version = str(version) if version is not None else None

    async def __call__(self, request: Request) -> JSONResponse:
        work = request.query_params.get("work_s")
        if work:
            await asyncio.sleep(float(work))
        hold = request.query_params.get(HOLD_PARAM)
        if hold:
            await held_until(hold)
        context = serve.get_replica_context()
        return JSONResponse(
            {
                "version": self._configured_version or os.environ.get("APP_VERSION", UNKNOWN_VERSION),
                "replica": context.replica_id.unique_id,
                "rank": _rank_number(getattr(context, "rank", None)),
                "world_size": getattr(context, "world_size", None),
            }
        )


Versioned = serve.deployment(name="Versioned")(_Versioned)
app = Versioned.bind()
