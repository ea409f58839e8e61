"""How a failed Kubernetes or Ray Dashboard call becomes a Temporal error.

Permanent answers (a request that will never succeed as it is: 400, 401, 403, 404 where it is not a success,
405, 410, 422 and other 4xx) become non-retryable `ApplicationError`s; the rest is retried by the activity's
retry policy: 409 conflicts, 408, 5xx and transport errors with its backoff, 429 and 503 after the server's
Retry-After when it gives one (a Kubernetes read meets a 5xx or no answer twice inside the activity first:
activities/kubernetes/client.py). The error `type` names what happened so workflows can match it
(`non_retryable_error_types` and `except ActivityError` compare type names).

Messages never carry credentials: Bearer tokens and any secret value the caller names are masked, and long
bodies are cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from temporalio.exceptions import ApplicationError

Source = Literal["kubernetes", "dashboard"]

# ---- error types ----------------------------------------------------------------------------------------
KUBERNETES_BAD_REQUEST: Final = "KubernetesBadRequest"
KUBERNETES_UNAUTHORIZED: Final = "KubernetesUnauthorized"
KUBERNETES_FORBIDDEN: Final = "KubernetesForbidden"
NOT_FOUND: Final = "NotFound"
KUBERNETES_METHOD_NOT_ALLOWED: Final = "KubernetesMethodNotAllowed"
KUBERNETES_GONE: Final = "KubernetesGone"
KUBERNETES_INVALID: Final = "KubernetesInvalid"
KUBERNETES_REJECTED: Final = "KubernetesRejected"  # any other permanent 4xx
KUBERNETES_CONFLICT: Final = "KubernetesConflict"
KUBERNETES_THROTTLED: Final = "KubernetesThrottled"
KUBERNETES_UNAVAILABLE: Final = "KubernetesUnavailable"
KUBERNETES_SERVER_ERROR: Final = "KubernetesServerError"
KUBERNETES_UNREACHABLE: Final = "KubernetesUnreachable"

DASHBOARD_REJECTED: Final = "DashboardRejected"
DASHBOARD_CONFLICT: Final = "DashboardConflict"
DASHBOARD_THROTTLED: Final = "DashboardThrottled"
DASHBOARD_UNAVAILABLE: Final = "DashboardUnavailable"
DASHBOARD_SERVER_ERROR: Final = "DashboardServerError"
DASHBOARD_UNREACHABLE: Final = "DashboardUnreachable"
DASHBOARD_BAD_RESPONSE: Final = "DashboardBadResponse"

# Raised by the activities themselves (not an HTTP status).
RAY_JOB_STILL_RUNNING: Final = "RayJobStillRunning"
SECRET_MISSING: Final = "RayAuthTokenMissing"
# Retryable: an earlier run's object had the name a create wants; it is being deleted.
LEFTOVER_OF_EARLIER_RUN: Final = "LeftoverOfEarlierRun"

NON_RETRYABLE_ERROR_TYPES: Final = (
    KUBERNETES_BAD_REQUEST,
    KUBERNETES_UNAUTHORIZED,
    KUBERNETES_FORBIDDEN,
    NOT_FOUND,
    KUBERNETES_METHOD_NOT_ALLOWED,
    KUBERNETES_GONE,
    KUBERNETES_INVALID,
    KUBERNETES_REJECTED,
    DASHBOARD_REJECTED,
    SECRET_MISSING,
)

_KUBERNETES_PERMANENT: Final = {
    400: KUBERNETES_BAD_REQUEST,
    401: KUBERNETES_UNAUTHORIZED,
    403: KUBERNETES_FORBIDDEN,
    404: NOT_FOUND,
    405: KUBERNETES_METHOD_NOT_ALLOWED,
    410: KUBERNETES_GONE,
    422: KUBERNETES_INVALID,
}
_RETRYABLE_4XX: Final = frozenset({408, 409, 429})
MAX_MESSAGE_CHARS: Final = 1000
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[^\s\"',;]+")


@dataclass(frozen=True)
class ErrorClass:
    """What a status means: the error type, whether a retry may help, and whether to wait Retry-After."""

    type: str
    retryable: bool
    honours_retry_after: bool = False


def classify_status(source: Source, status: int) -> ErrorClass:
    """The class of an HTTP status (0 = no answer: connection refused, timeout, TLS failure)."""
    dashboard = source == "dashboard"
    if status == 0:
        return ErrorClass(DASHBOARD_UNREACHABLE if dashboard else KUBERNETES_UNREACHABLE, True)
    if status == 429:
        return ErrorClass(DASHBOARD_THROTTLED if dashboard else KUBERNETES_THROTTLED, True, True)
    if status == 503:
        return ErrorClass(DASHBOARD_UNAVAILABLE if dashboard else KUBERNETES_UNAVAILABLE, True, True)
    if status == 409:
        return ErrorClass(DASHBOARD_CONFLICT if dashboard else KUBERNETES_CONFLICT, True)
    if 400 <= status < 500 and status not in _RETRYABLE_4XX:
        if dashboard:
            return ErrorClass(DASHBOARD_REJECTED, False)
        return ErrorClass(_KUBERNETES_PERMANENT.get(status, KUBERNETES_REJECTED), False)
    return ErrorClass(DASHBOARD_SERVER_ERROR if dashboard else KUBERNETES_SERVER_ERROR, True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` without credentials (Bearer/Basic values and the given secret strings), at most
    MAX_MESSAGE_CHARS long."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _BEARER.sub(lambda match: f"{match.group(1)} ***", text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text


def retry_after_seconds(headers: Mapping[str, str] | None, body: Any = None) -> float | None:
    """The delay the server asked for: the Retry-After header (seconds), else a Kubernetes Status body's
    details.retryAfterSeconds. HTTP-date Retry-After values are ignored (the retry policy's backoff
    applies)."""
    if headers:
        for key, value in headers.items():
            if key.lower() == "retry-after":
                try:
                    header_seconds = float(str(value).strip())
                except ValueError:
                    break
                return header_seconds if header_seconds >= 0 else None
    status = status_body(body)
    details = status.get("details") if status else None
    if isinstance(details, Mapping):
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int | float) and seconds >= 0:
            return float(seconds)
    return None


def status_body(body: Any) -> dict[str, Any] | None:
    """A Kubernetes `Status` object from a response body (text or parsed), if it is one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return body
    return None


def status_reason(body: Any) -> str:
    """The `reason` of a Kubernetes Status body ("AlreadyExists", "Conflict", ...), "" if none."""
    status = status_body(body)
    return str(status.get("reason") or "") if status else ""


def http_error(
    source: Source,
    status: int,
    what: str,
    detail: str = "",
    *,
    retry_after: float | None = None,
    secrets: Iterable[str] = (),
) -> ApplicationError:
    """The ApplicationError for a failed call, "<what>: HTTP <status>: <detail>", classified by
    `classify_status`."""
    error_class = classify_status(source, status)
    status_text = f"HTTP {status}" if status else "no response"
    message = redact(f"{what}: {status_text}" + (f": {detail}" if detail else ""), secrets)
    delay = (
        timedelta(seconds=retry_after)
        if error_class.honours_retry_after and retry_after is not None
        else None
    )
    return ApplicationError(
        message,
        type=error_class.type,
        non_retryable=not error_class.retryable,
        next_retry_delay=delay,
    )


def kubernetes_error(exc: Any, what: str) -> ApplicationError:
    """From a `kubernetes.client.exceptions.ApiException` (status 0 when no answer came back)."""
    body = getattr(exc, "body", None)
    status = status_body(body)
    detail = str(status.get("message") or "") if status else str(body or getattr(exc, "reason", "") or "")
    headers = getattr(exc, "headers", None)
    return http_error(
        "kubernetes",
        int(getattr(exc, "status", 0) or 0),
        what,
        detail,
        retry_after=retry_after_seconds(dict(headers) if headers else None, body),
    )
