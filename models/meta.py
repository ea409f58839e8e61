"""Kubernetes object metadata (metav1.ObjectMeta) and status conditions (metav1.Condition)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from models.base import ForeignStatusModel, Int64, SpecModel, Time

DEFAULT_NAMESPACE = "default"


class ObjectMeta(SpecModel):
    """metav1.ObjectMeta. `namespace` defaults to "default" (the contract), without appearing in dumps."""

    name: str = ""
    generate_name: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    owner_references: list[dict[str, Any]] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
    # Server-maintained bookkeeping: kept opaque so objects read back from a cluster still parse.
    managed_fields: list[dict[str, Any]] = Field(default_factory=list)
    self_link: str | None = None


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(ForeignStatusModel):
    """metav1.Condition: one observation of an object's state, keyed by `type`."""

    type: str
    status: ConditionStatus
    observed_generation: Int64 | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


def find_condition(conditions: list[Condition], condition_type: str) -> Condition | None:
    """The condition of that type, if present (conditions are a map keyed by type)."""
    return next((condition for condition in conditions if condition.type == condition_type), None)


def is_condition_true(conditions: list[Condition], condition_type: str) -> bool:
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.status == ConditionStatus.TRUE


def with_condition_replaced(conditions: list[Condition], condition: Condition) -> list[Condition]:
    """`conditions` with `condition` in place of any of its type, listed last."""
    return [kept for kept in conditions if kept.type != condition.type] + [condition]
