"""Kubernetes API errors (rendered as Status bodies) and the timestamp format of object metadata."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sandbox.resources import ResourceType


class ApiError(Exception):
    """An error the API server reports as a `Status` body with this HTTP status code."""

    def __init__(self, status: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status,
        }
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.reason!r}, {self.message!r})"


def _details(rt: ResourceType, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.qualified_plural} "{name}" not found', _details(rt, name))


def already_exists(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409, "AlreadyExists", f'{rt.qualified_plural} "{name}" already exists', _details(rt, name)
    )


def conflict(rt: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.qualified_plural} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        _details(rt, name),
    )


def invalid(rt: ResourceType, name: str, field_error: str) -> ApiError:
    kind = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {field_error}', _details(rt, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
