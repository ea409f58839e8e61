"""Registering raypilot's search attributes on a Temporal namespace when they are missing."""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

log = logging.getLogger(__name__)


async def missing_search_attributes(
    client: Client, namespace: str, keys: tuple[SearchAttributeKey[str], ...] = ALL_SEARCH_ATTRIBUTES
) -> list[str]:
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    return [key.name for key in keys if key.name not in response.custom_attributes]


async def ensure_search_attributes(client: Client, namespace: str) -> list[str]:
    """Registers the missing keys and returns their names. Where the server does not let a worker do
    this (Temporal Cloud manages them through its own API), it logs what the operator has to create."""
    try:
        missing = await missing_search_attributes(client, namespace)
    except RPCError as err:
        if err.status not in (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.PERMISSION_DENIED):
            raise
        # The time-skipping test server cannot list; adding is idempotent there.
        missing = [key.name for key in ALL_SEARCH_ATTRIBUTES]
    if not missing:
        return []
    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=dict.fromkeys(missing, keyword))
        )
    except RPCError as err:
        if err.status == RPCStatusCode.ALREADY_EXISTS:
            return []
        if err.status != RPCStatusCode.PERMISSION_DENIED:
            raise
        log.warning(
            "cannot register search attributes %s on namespace %s (%s); create them as Keyword, e.g. "
            "`temporal operator search-attribute create --name RayPhase --type Keyword`",
            ", ".join(missing),
            namespace,
            err.message,
        )
        return []
    log.info("registered search attributes %s on namespace %s", ", ".join(missing), namespace)
    return missing
