"""The stubs of the activities that act on Gateway API objects (Gateways, HTTPRoutes)."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from wire import names
from wire.kubernetes import CreateObject, DeleteObject, ObjectKey, UpdateSpec
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.CREATE_GATEWAY)
async def create_gateway(request: CreateObject) -> dict[str, Any]:
    """`activities.gateway.GatewayActivities.create_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_GATEWAY)
async def get_gateway(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.get_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_GATEWAY_SPEC)
async def update_gateway_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.update_gateway_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_GATEWAY)
async def delete_gateway(request: DeleteObject) -> bool:
    """`activities.gateway.GatewayActivities.delete_gateway`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.CREATE_HTTPROUTE)
async def create_httproute(request: CreateObject) -> dict[str, Any]:
    """`activities.gateway.GatewayActivities.create_httproute`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.GET_HTTPROUTE)
async def get_httproute(key: ObjectKey) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.get_httproute`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.UPDATE_HTTPROUTE_SPEC)
async def update_httproute_spec(request: UpdateSpec) -> dict[str, Any] | None:
    """`activities.gateway.GatewayActivities.update_httproute_spec`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.DELETE_HTTPROUTE)
async def delete_httproute(request: DeleteObject) -> bool:
    """`activities.gateway.GatewayActivities.delete_httproute`"""
    raise NotImplementedError(_STUB)
