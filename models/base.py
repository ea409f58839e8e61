"""Shared building blocks of the KubeRay models: base classes, RFC3339 times, int32, quantities, dumping.

Conventions every model follows:
- the Python attribute is the snake_case of the KubeRay JSON name, the alias is the exact JSON name;
  models validate by either and serialize by alias;
- KubeRay's CRD defaults are field defaults, so they are visible on the model, while `exclude_unset`
  dumps give back exactly what was parsed (nothing invented).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

# The configs below are spelled out in full (not built from a shared dict) because the pydantic mypy plugin
# only sees literal `ConfigDict(...)` arguments: it must know that fields are accepted by Python name.
# validate_assignment: an assigned field must stay valid and count as set, so exclude_unset dumps include it.


def _admits_none(annotation: Any) -> bool:
    return annotation is None or annotation is type(None) or type(None) in get_args(annotation)


class _KubernetesModel(BaseModel):
    """Kubernetes treats `null` as "not given" for fields that cannot be null; so do we (the default applies).

    Fields that can be None keep an explicit null, so such manifests still dump back unchanged.
    """

    @model_validator(mode="before")
    @classmethod
    def _null_means_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict) or None not in data.values():
            return data
        non_nullable = _non_nullable_keys(cls)
        return {key: value for key, value in data.items() if value is not None or key not in non_nullable}


@cache
def _non_nullable_keys(model: type[BaseModel]) -> frozenset[str]:
    keys: set[str] = set()
    for name, field in model.model_fields.items():
        if not _admits_none(field.annotation):
            keys.add(name)
            if field.alias is not None:
                keys.add(field.alias)
    return frozenset(keys)


def _camel_case_config(extra: Literal["forbid", "allow", "ignore"]) -> ConfigDict:
    """Kubernetes JSON: camelCase keys (snake_case attribute names accepted too), checked on assignment;
    `extra` says what happens to a key the model does not declare."""
    return ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        validate_assignment=True,
        extra=extra,
    )


class SpecModel(_KubernetesModel):
    """A part of a spec or of a status raypilot writes: unknown fields are an error."""

    model_config = _camel_case_config("forbid")


class PassthroughModel(_KubernetesModel):
    """A Kubernetes shape raypilot only partly reads: unknown fields are kept and dumped unchanged."""

    model_config = _camel_case_config("allow")


class ForeignStatusModel(_KubernetesModel):
    """A status another controller writes: unknown keys are ignored so newer writers never break us."""

    model_config = _camel_case_config("ignore")


def _as_utc(value: datetime) -> datetime:
    # RFC3339 always carries an offset; a naive time can only sensibly mean UTC.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_rfc3339(value: datetime) -> str:
    """RFC3339 in UTC with a "Z" suffix, like Kubernetes' metav1.Time (sub-seconds only when present)."""
    utc = _as_utc(value)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


Time = Annotated[datetime, AfterValidator(_as_utc), PlainSerializer(format_rfc3339, return_type=str)]
"""A Kubernetes timestamp: parsed from RFC3339, always timezone-aware UTC, serialized as RFC3339 "Z"."""

Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = int

EnumT = TypeVar("EnumT", bound=StrEnum)


def known_member(enum_type: type[EnumT]) -> BeforeValidator:
    """For `Annotated[SomeEnum | str, known_member(SomeEnum)]`: a known value becomes the enum member, an
    unknown one stays a plain string.

    Used where KubeRay's CRD leaves a value open and its controller rejects unknown ones, so that validation
    can report KubeRay's own message instead of a parse error.
    """

    def to_member(value: object) -> object:
        if isinstance(value, str) and not isinstance(value, enum_type):
            try:
                return enum_type(value)
            except ValueError:
                return value
        return value

    return BeforeValidator(to_member)


Quantity = str | int | float
"""A Kubernetes resource.Quantity ("500m", "1Gi", 2, 0.5), kept exactly as written."""


def dump_manifest(model: BaseModel) -> dict[str, Any]:
    """The JSON form of a parsed or built object: KubeRay names, only the fields that were set.

    Parsing a manifest and dumping it gives back the same JSON; defaults are never invented.
    """
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


# Status fields that are pointers in KubeRay's Go types: a zero there is a value, not an absence.
_GO_POINTER_FIELDS = frozenset({"succeeded", "failed", "targetCapacity", "trafficRoutedPercent"})


def dump_status(model: BaseModel) -> dict[str, Any]:
    """The JSON form of a status the way KubeRay writes it (Go `omitempty`).

    Drops None, "", 0, false and empty maps/lists, except zeros of fields that are pointers in Go.
    Inside list items (conditions), whose Go fields are mostly not omitempty, only None is dropped.
    """
    pruned = _prune(model.model_dump(mode="json", by_alias=True))
    return pruned if isinstance(pruned, dict) else {}


def _prune(value: Any, *, only_none: bool = False) -> Any:
    if isinstance(value, dict):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            pruned = _prune(item, only_none=only_none)
            if pruned is None or (not only_none and _is_go_empty(pruned) and key not in _GO_POINTER_FIELDS):
                continue
            kept[key] = pruned
        return kept
    if isinstance(value, list):
        return [_prune(item, only_none=True) for item in value]
    return value


def _is_go_empty(value: Any) -> bool:
    return value in ("", 0, False) or (isinstance(value, dict | list) and not value)
