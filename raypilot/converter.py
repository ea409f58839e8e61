"""raypilot's data converter: pydantic's, except that JSON too deeply nested to decode is a `ValidationFailed`
failure instead of a decoding error.

A manifest reaches a workflow as JSON from any client (the temporal CLI accepts 10000 levels of nesting).
pydantic's decoder gives up at a few hundred levels, and the SDK turns a decoding error of a workflow's input
into a failed workflow task, retried forever. An `ApplicationError` raised while decoding instead fails the
workflow (or rejects an update) with that error, as the contract asks of any invalid input.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
)
from temporalio.exceptions import ApplicationError

from models.manifest import NESTED_TOO_DEEPLY

VALIDATION_FAILED = "ValidationFailed"


def _too_deep(error: ValidationError) -> bool:
    return any("recursion limit exceeded" in str(detail.get("msg", "")) for detail in error.errors())


# The SDK builds a new payload converter for every workflow task (a data converter per serialization
# context), and pydantic's converter keeps its TypeAdapters per instance: each task built the adapters of its
# payloads' types again (pydantic schema generation: ~9 % of a worker's CPU in a RayJob lifecycle, P5). One
# cache for every instance of the process.
_shared_type_adapter = functools.lru_cache(maxsize=1024)(TypeAdapter)


def type_adapter(type_hint: Any) -> TypeAdapter[Any]:
    """The process's TypeAdapter for a type hint (built once); an unhashable hint gets a new one."""
    try:
        adapter: TypeAdapter[Any] = _shared_type_adapter(type_hint)
    except TypeError:
        try:
            hash(type_hint)
        except TypeError:
            return TypeAdapter(type_hint)
        raise  # building the adapter failed
    return adapter


class DepthCheckedJSONPayloadConverter(PydanticJSONPlainPayloadConverter):
    def __init__(self) -> None:
        super().__init__(max_cached_type_adapters=0)  # the process-wide cache is used instead

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        try:
            return type_adapter(Any if type_hint is None else type_hint).validate_json(payload.data)
        except ValidationError as error:
            if not _too_deep(error):
                raise
        except RecursionError:
            pass
        raise ApplicationError(NESTED_TOO_DEEPLY, type=VALIDATION_FAILED, non_retryable=True)


class RaypilotPayloadConverter(CompositePayloadConverter):
    """The default converters, with JSON through pydantic and a depth check."""

    def __init__(self) -> None:
        json_converter = DepthCheckedJSONPayloadConverter()
        super().__init__(
            *(
                json_converter if isinstance(converter, JSONPlainPayloadConverter) else converter
                for converter in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )


raypilot_data_converter = DataConverter(payload_converter_class=RaypilotPayloadConverter)
