"""What is left in a namespace, read by the API server's admin straight from kube-apiserver (not through the
worker's fault proxy, so the API faults a test injects never disturb its own checks), and the Events raypilot
recorded."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any, Final

from tests.integration.stack import Stack

# The kinds raypilot creates (directly or through the RayCluster it creates).
OWNED_KINDS: Final = (
    ("ray.io/v1", "RayCluster"),
    ("batch/v1", "Job"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("gateway.networking.k8s.io/v1", "Gateway"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
)


def store_list(stack: Stack, api_version: str, kind: str, namespace: str | None) -> list[dict[str, Any]]:
    """Every `kind` object of `namespace`, or of every namespace (the kinds here are all plural with an
    `s`)."""
    group = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    where = f"/namespaces/{namespace}" if namespace else ""
    request = stack.api_client.param_serialize("GET", f"{group}{where}/{kind.lower()}s", auth_settings=[])
    response = stack.api_client.call_api(*request)
    listed = json.loads(response.read())
    assert response.status == 200, listed
    return list(listed["items"])


def leftovers(stack: Stack, namespace: str) -> list[str]:
    """Every object of the owned kinds still in `namespace` (being deleted counts as gone)."""
    return [
        f"{kind}/{obj['metadata']['name']}"
        for api_version, kind in OWNED_KINDS
        for obj in store_list(stack, api_version, kind, namespace)
        if not obj["metadata"].get("deletionTimestamp")
    ]


def kinds_left(stack: Stack, namespace: str) -> Counter[str]:
    """How many objects of each owned kind are left in `namespace` (names carry random suffixes)."""
    return Counter(entry.split("/", 1)[0] for entry in leftovers(stack, namespace))


def difference(left: Counter[str], undisturbed: Counter[str]) -> list[str]:
    """Where a disturbed run's leftovers differ from an undisturbed run's: extra (leaked or duplicated)
    and missing objects per kind."""
    extra = [f"+{count} {kind}" for kind, count in (left - undisturbed).items()]
    missing = [f"-{count} {kind}" for kind, count in (undisturbed - left).items()]
    return extra + missing


def event_reasons(stack: Stack, namespace: str) -> list[str]:
    """The reasons of raypilot's Events: those about its RayJobs and RayServices (KubeRay posts its own, about
    the RayClusters it reconciles)."""
    return [
        str(event.get("reason"))
        for event in store_list(stack, "v1", "Event", namespace)
        if (event.get("involvedObject") or {}).get("kind") in ("RayJob", "RayService")
    ]


def created_count(stack: Stack, namespace: str, reason: str) -> int:
    """How many `reason` Events the namespace has (e.g. CreatedRayCluster: one per cluster created)."""
    return event_reasons(stack, namespace).count(reason)


@contextlib.asynccontextmanager
async def names_seen(stack: Stack, namespace: str, kind: str = "RayCluster") -> AsyncIterator[set[str]]:
    """Every name of `kind` (ray.io/v1) that existed in `namespace` while the block ran (sampled every
    0.1 s: an object that would live shorter than that is missed), to catch duplicates."""
    seen: set[str] = set()

    async def sample() -> None:
        while True:
            listed = await asyncio.to_thread(store_list, stack, "ray.io/v1", kind, namespace)
            seen.update(obj["metadata"]["name"] for obj in listed)
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample())
    try:
        yield seen
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
