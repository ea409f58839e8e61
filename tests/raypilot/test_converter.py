"""raypilot's data converter: JSON nested beyond what pydantic decodes becomes a ValidationFailed failure
(which fails the workflow or rejects the update) instead of a decoding error (a task retried forever)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.exceptions import ApplicationError

from raypilot.converter import (
    RaypilotPayloadConverter,
    _shared_type_adapter,
    raypilot_data_converter,
    type_adapter,
)


def json_payload(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


def decode(text: str, type_hint: Any = Any) -> Any:
    return raypilot_data_converter.payload_converter.from_payload(json_payload(text), type_hint)


@pytest.mark.parametrize("depth", [1_000, 9_999])
def test_too_deeply_nested_json_is_a_validation_failure(depth: int) -> None:
    with pytest.raises(ApplicationError) as raised:
        decode('{"spec": ' + "[" * depth + "]" * depth + "}")
    assert raised.value.type == "ValidationFailed"
    assert raised.value.non_retryable
    assert raised.value.message == "the manifest is nested too deeply to read"


def test_ordinary_json_and_ordinary_errors_are_unchanged() -> None:
    assert decode('{"spec": [[1]]}') == {"spec": [[1]]}
    with pytest.raises(ValidationError):
        decode('"x"', int)


def test_values_round_trip() -> None:
    manifest = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "a"}}
    payloads = raypilot_data_converter.payload_converter.to_payloads([manifest])
    assert raypilot_data_converter.payload_converter.from_payloads(payloads, [dict]) == [manifest]


def test_converters_built_for_each_workflow_task_share_their_type_adapters() -> None:
    """The SDK builds a payload converter per workflow task; the TypeAdapter of a type is built once."""

    class Fresh(BaseModel):  # a type no test decoded before
        entrypoint: str

    payload = json_payload('{"entrypoint": "python run.py"}')
    before = _shared_type_adapter.cache_info()
    first, second = RaypilotPayloadConverter(), RaypilotPayloadConverter()
    assert (
        first.from_payload(payload, Fresh)
        == second.from_payload(payload, Fresh)
        == Fresh(entrypoint="python run.py")
    )
    after = _shared_type_adapter.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)


def test_an_unhashable_type_hint_still_decodes() -> None:
    unhashable: Any = Annotated[list[int], {"note": "a dict is not hashable"}]
    with pytest.raises(TypeError):
        hash(unhashable)
    assert type_adapter(unhashable).validate_json("[1]") == [1]
    assert decode("[1]", unhashable) == [1]
