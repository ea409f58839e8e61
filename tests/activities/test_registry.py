"""Every activity name is registered exactly once, and sync/async as its I/O requires."""

from __future__ import annotations

import inspect

from activities.registry import ActivityDependencies
from tests.activities.conftest import registered_activities
from wire import names


async def test_every_named_activity_is_registered_once() -> None:
    registered_names = [name for name, _ in await registered_activities()]
    assert len(registered_names) == len(set(registered_names))
    declared = {value for key, value in vars(names).items() if key.isupper() and isinstance(value, str)}
    assert declared == set(registered_names)


async def test_kubernetes_crud_is_sync_and_dashboard_temporal_and_waits_are_async() -> None:
    for name, fn in await registered_activities():
        is_async = inspect.iscoroutinefunction(fn)
        # The Kubernetes client blocks (threads); httpx and the Temporal client are asyncio.
        # The observers (dashboard lists, Kubernetes watches, Temporal signals) and the analysis gates (HTTP)
        # are asyncio too, as is the webhook of a notification (httpx, its Secret read through the asyncio
        # API server client).
        prefixes = ("dashboard.", "temporal.", "observer.", "k8s_observer.", "analysis.", "notify.")
        expected_async = name.startswith(prefixes) or ".wait_" in name
        assert is_async == expected_async, name


def test_dependencies_do_not_load_a_kubeconfig_until_used() -> None:
    dependencies = ActivityDependencies.from_env({"KUBECONFIG": "/does/not/exist"})
    assert dependencies.kube_configuration is None
