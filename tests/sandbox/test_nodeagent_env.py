"""Container environment resolution as the kubelet does it (no Store needed: a dict stands in)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from sandbox.nodeagent.env import (
    EnvResolutionError,
    container_argv,
    container_environment,
    expand_references,
)


class FakeObjects:
    def __init__(self, objects: dict[tuple[str, str, str], dict[str, Any]]) -> None:
        self.objects = objects

    def try_get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace or "", name))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


POD = {
    "metadata": {"name": "p-abcde", "namespace": "ns", "uid": "u1", "labels": {"app": "demo"}},
    "status": {"podIP": "127.0.3.7"},
}
OBJECTS = FakeObjects(
    {
        ("Secret", "ns", "auth"): {"metadata": {"name": "auth"}, "data": {"token": b64("s3cret")}},
        ("ConfigMap", "ns", "cfg"): {"metadata": {"name": "cfg"}, "data": {"mode": "fast", "level": "2"}},
    }
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)-x", "1-x"),
        ("$(MISSING)", "$(MISSING)"),
        ("$$(A)", "$(A)"),
        ("no refs", "no refs"),
        ("$(A)$(B)", "12"),
    ],
)
def test_expand_references(text: str, expected: str) -> None:
    assert expand_references(text, {"A": "1", "B": "2"}) == expected


def test_env_sources_are_resolved_in_order() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}],
        "env": [
            {"name": "PLAIN", "value": "v"},
            {"name": "DERIVED", "value": "$(PLAIN)-$(CFG_mode)"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "auth", "key": "token"}}},
            {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "level"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}}},
        ],
    }
    env = container_environment(OBJECTS, POD, container)
    assert env == {
        "CFG_mode": "fast",
        "CFG_level": "2",
        "PLAIN": "v",
        "DERIVED": "v-fast",
        "TOKEN": "s3cret",
        "LEVEL": "2",
        "POD_NAME": "p-abcde",
        "POD_IP": "127.0.3.7",
        "APP": "demo",
    }


@pytest.mark.parametrize(
    "value_from",
    [
        {"secretKeyRef": {"name": "nope", "key": "token"}},
        {"secretKeyRef": {"name": "auth", "key": "other"}},
        {"configMapKeyRef": {"name": "cfg", "key": "other"}},
        {"fieldRef": {"fieldPath": "spec.unknown"}},
    ],
)
def test_missing_references_are_errors(value_from: dict[str, Any]) -> None:
    with pytest.raises(EnvResolutionError):
        container_environment(OBJECTS, POD, {"env": [{"name": "X", "valueFrom": value_from}]})


def test_argv_is_command_then_args_with_expansion() -> None:
    container = {"command": ["/bin/bash", "-ce", "--"], "args": ["echo $(NAME) $$(NAME)"]}
    assert container_argv(container, {"NAME": "x"}) == ["/bin/bash", "-ce", "--", "echo x $(NAME)"]
    assert container_argv({"args": ["python", "-V"]}, {}) == ["python", "-V"]
