"""Kubernetes PodTemplateSpec, modelled only where raypilot reads it.

Every model here keeps the fields it does not declare (extra="allow") and dumps them back unchanged, so any
pod template Kubernetes accepts passes through raypilot untouched.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from models.base import Int32, Int64, PassthroughModel, Quantity
from models.meta import ObjectMeta


class EnvVar(PassthroughModel):
    name: str
    value: str | None = None
    value_from: dict[str, Any] | None = None


class ContainerPort(PassthroughModel):
    name: str | None = None
    container_port: Int32
    protocol: str | None = None
    host_port: Int32 | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")


class ResourceRequirements(PassthroughModel):
    limits: dict[str, Quantity] = Field(default_factory=dict)
    requests: dict[str, Quantity] = Field(default_factory=dict)


class Container(PassthroughModel):
    name: str
    image: str | None = None
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    ports: list[ContainerPort] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)

    def env_value(self, name: str) -> str | None:
        """The literal value of an environment variable (None if unset or taken from a source)."""
        return next((var.value for var in self.env if var.name == name), None)

    def port_number(self, name: str) -> int | None:
        """The container port with that name, if declared."""
        return next((port.container_port for port in self.ports if port.name == name), None)


class Toleration(PassthroughModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class PodSchedulingGate(PassthroughModel):
    name: str


class PodSpec(PassthroughModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    restart_policy: str | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    scheduling_gates: list[PodSchedulingGate] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    service_account_name: str | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)

    def container(self, name: str) -> Container | None:
        return next((container for container in self.containers if container.name == name), None)


class PodTemplateSpec(PassthroughModel):
    """corev1.PodTemplateSpec: `metadata` (labels, annotations, ...) and `spec`."""

    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)
