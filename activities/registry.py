"""Everything the activities share (clients, settings) and the one list of activities the worker registers."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from activities.config import read_operator_config


@dataclass
class ActivityDependencies:
    """Clients shared by all activities of one worker process. The Kubernetes client is made on first use so
    a worker starts (and registers with Temporal) even before a kubeconfig exists."""

    env: Mapping[str, str]
    http: httpx.AsyncClient = field(
        default_factory=lambda: httpx.AsyncClient(
            # No browser-like headers: the Ray dashboard rejects writes from "browsers" (apis-and-peers A.1).
            headers={"User-Agent": "raypilot"},
            timeout=httpx.Timeout(10.0),
        )
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ActivityDependencies:
        return cls(env=dict(os.environ if env is None else env))

    async def aclose(self) -> None:
        await self.http.aclose()


def build_activities(dependencies: ActivityDependencies) -> list[Callable[..., Any]]:
    """Every activity raypilot registers, bound to the shared clients."""
    del dependencies  # the activity classes of the workflow issues take it
    return [read_operator_config]
