"""A pytest plugin that logs every Kubernetes API request an activity makes, for the RBAC comparison test.

Loaded with `-p tests.docs.rbac_audit` into a run of the activity tests (tests/docs/test_rbac.py does that in
a subprocess). The activities reach the API server through exactly two clients, `KubeObjects.request`
(blocking verbs) and `AsyncApiServer.request` / `AsyncApiServer.watch` (waits, Secrets, the service and pod
proxy); this plugin wraps those three methods, and every activity method of the classes the worker registers
(so that a request knows which activity made it, also under ActivityEnvironment, whose activity type is
"unknown"). Each request made inside an activity becomes one JSON line in the file named by
RAYPILOT_RBAC_AUDIT_LOG: the activity name, the HTTP method, the path and whether it was a watch. Requests
made by test code outside an activity are not activity usage and are not logged.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest

from activities.kubernetes.async_api import AsyncApiServer
from activities.kubernetes.client import KubeObjects
from activities.registry import ActivityDependencies, build_activities

AUDIT_LOG_ENV = "RAYPILOT_RBAC_AUDIT_LOG"
_write_lock = threading.Lock()
_current_activity: contextvars.ContextVar[str | None] = contextvars.ContextVar("activity", default=None)


def _tagged(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` running as activity `name` (functools.wraps keeps its activity definition)."""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            token = _current_activity.set(name)
            try:
                return await method(*args, **kwargs)
            finally:
                _current_activity.reset(token)

        return run_async

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = _current_activity.set(name)
        try:
            return method(*args, **kwargs)
        finally:
            _current_activity.reset(token)

    return run


def _tag_activities() -> list[str]:
    """Wrap every registered activity method in its class; returns the activity names."""
    names = []
    for bound in build_activities(ActivityDependencies.from_env({})):
        name = getattr(bound, "__temporal_activity_definition").name
        names.append(name)
        owner = getattr(bound, "__self__", None)
        if owner is not None:
            function = bound.__func__  # type: ignore[attr-defined]
            setattr(type(owner), function.__name__, _tagged(name, function))
    return names


def _log(method: str, path: str, *, watch: bool) -> None:
    activity_type = _current_activity.get()
    target = os.environ.get(AUDIT_LOG_ENV)
    if activity_type is None or not target:
        return
    record = {"activity": activity_type, "method": method.upper(), "path": path, "watch": watch}
    with _write_lock, open(target, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def _install() -> None:
    _tag_activities()
    original_sync_request = KubeObjects.request
    original_async_request = AsyncApiServer.request
    original_watch = AsyncApiServer.watch

    def sync_request(self: KubeObjects, method: str, path: str, **kwargs: Any) -> Any:
        _log(method, path, watch=False)
        return original_sync_request(self, method, path, **kwargs)

    async def async_request(self: AsyncApiServer, method: str, path: str, **kwargs: Any) -> Any:
        _log(method, path, watch=False)
        return await original_async_request(self, method, path, **kwargs)

    async def watch(
        self: AsyncApiServer, path: str, params: Mapping[str, str], timeout_seconds: int, what: str
    ) -> AsyncIterator[dict[str, Any]]:
        _log("GET", path, watch=True)
        async for event in original_watch(self, path, params, timeout_seconds, what):
            yield event

    KubeObjects.request = sync_request  # type: ignore[method-assign]
    AsyncApiServer.request = async_request  # type: ignore[method-assign]
    AsyncApiServer.watch = watch  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    _install()
