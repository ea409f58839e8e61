"""What the Gateway controller reads in these tests: a fixed set of objects in memory, status writes landing
on them. The controller's own watches are never started here (the tests call `reconcile()`); beside a real API
server it reads the same kinds through sandbox/realkube/apiobjects.py (tests/realkube/test_gateway.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

Obj = dict[str, Any]


class Objects:
    def __init__(self, *objects: Obj) -> None:
        self.objects = list(objects)

    def read_list(self, api_version: str, kind: str) -> list[Obj]:
        return [o for o in self.objects if (o.get("apiVersion", "v1"), o.get("kind")) == (api_version, kind)]

    def one(self, kind: str, name: str) -> Obj:
        return next(o for o in self.objects if (o.get("kind"), o["metadata"]["name"]) == (kind, name))

    async def watch(self, api_version: str, kind: str) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests drive reconcile() themselves")
        yield  # pragma: no cover - makes this an async generator

    def update(self, api_version: str, kind: str, obj: Obj, *, status: bool = False) -> Obj:
        stored = self.one(kind, obj["metadata"]["name"])
        stored["status"] = obj["status"]
        return stored
