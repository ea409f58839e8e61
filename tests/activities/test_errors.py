"""Error classification: HTTP statuses of Kubernetes and the Ray dashboard -> Temporal ApplicationErrors."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from activities import errors
from activities.errors import classify_status, http_error, kubernetes_error, redact, retry_after_seconds


@pytest.mark.parametrize(
    ("status", "error_type", "retryable", "honours_retry_after"),
    [
        (0, errors.KUBERNETES_UNREACHABLE, True, False),
        (400, errors.KUBERNETES_BAD_REQUEST, False, False),
        (401, errors.KUBERNETES_UNAUTHORIZED, False, False),
        (403, errors.KUBERNETES_FORBIDDEN, False, False),
        (404, errors.NOT_FOUND, False, False),
        (405, errors.KUBERNETES_METHOD_NOT_ALLOWED, False, False),
        (408, errors.KUBERNETES_SERVER_ERROR, True, False),
        (409, errors.KUBERNETES_CONFLICT, True, False),
        (410, errors.KUBERNETES_GONE, False, False),
        (413, errors.KUBERNETES_REJECTED, False, False),
        (415, errors.KUBERNETES_REJECTED, False, False),
        (422, errors.KUBERNETES_INVALID, False, False),
        (429, errors.KUBERNETES_THROTTLED, True, True),
        (500, errors.KUBERNETES_SERVER_ERROR, True, False),
        (502, errors.KUBERNETES_SERVER_ERROR, True, False),
        (503, errors.KUBERNETES_UNAVAILABLE, True, True),
        (504, errors.KUBERNETES_SERVER_ERROR, True, False),
    ],
)
def test_kubernetes_status_classes(
    status: int, error_type: str, retryable: bool, honours_retry_after: bool
) -> None:
    found = classify_status("kubernetes", status)
    assert (found.type, found.retryable, found.honours_retry_after) == (
        error_type,
        retryable,
        honours_retry_after,
    )


@pytest.mark.parametrize(
    ("status", "error_type", "retryable"),
    [
        (0, errors.DASHBOARD_UNREACHABLE, True),
        (400, errors.DASHBOARD_REJECTED, False),
        (401, errors.DASHBOARD_REJECTED, False),
        (403, errors.DASHBOARD_REJECTED, False),
        (404, errors.DASHBOARD_REJECTED, False),
        (405, errors.DASHBOARD_REJECTED, False),
        (409, errors.DASHBOARD_CONFLICT, True),
        (410, errors.DASHBOARD_REJECTED, False),
        (422, errors.DASHBOARD_REJECTED, False),
        (429, errors.DASHBOARD_THROTTLED, True),
        (500, errors.DASHBOARD_SERVER_ERROR, True),
        (501, errors.DASHBOARD_SERVER_ERROR, True),
        (503, errors.DASHBOARD_UNAVAILABLE, True),
    ],
)
def test_dashboard_status_classes(status: int, error_type: str, retryable: bool) -> None:
    found = classify_status("dashboard", status)
    assert (found.type, found.retryable) == (error_type, retryable)


@pytest.mark.parametrize(
    ("status", "retry_after", "expected_delay"),
    [
        (429, 7.0, timedelta(seconds=7)),
        (503, 2.5, timedelta(seconds=2.5)),
        (429, None, None),  # no Retry-After: the retry policy's backoff
        (500, 7.0, None),  # only 429/503 honour it
        (404, 7.0, None),
    ],
)
def test_http_error_retry_delay(
    status: int, retry_after: float | None, expected_delay: timedelta | None
) -> None:
    error = http_error("dashboard", status, "GetServeDetails fail", "busy", retry_after=retry_after)
    assert error.next_retry_delay == expected_delay
    assert error.non_retryable is not classify_status("dashboard", status).retryable
    assert error.message == f"GetServeDetails fail: HTTP {status}: busy"


def test_http_error_without_response_says_so() -> None:
    error = http_error("kubernetes", 0, 'get rayclusters "x"', "ConnectionRefusedError")
    assert error.message == 'get rayclusters "x": no response: ConnectionRefusedError'
    assert error.type == errors.KUBERNETES_UNREACHABLE
    assert not error.non_retryable


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({"Retry-After": "3"}, None, 3.0),
        ({"retry-after": " 12 "}, None, 12.0),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None, None),
        ({"Retry-After": "-1"}, None, None),
        (None, {"kind": "Status", "details": {"retryAfterSeconds": 4}}, 4.0),
        (None, json.dumps({"kind": "Status", "details": {"retryAfterSeconds": 5}}), 5.0),
        ({}, {"kind": "Status", "details": {}}, None),
        (None, "not json", None),
    ],
)
def test_retry_after_seconds(headers: dict[str, str] | None, body: Any, expected: float | None) -> None:
    assert retry_after_seconds(headers, body) == expected


@pytest.mark.parametrize(
    ("text", "secrets", "expected"),
    [
        ("Authorization: Bearer abc.def-123 rejected", (), "Authorization: Bearer *** rejected"),
        ("x-ray-authorization: bearer s3cr3t", (), "x-ray-authorization: bearer ***"),
        ("token s3cr3t leaked in a body", ("s3cr3t",), "token *** leaked in a body"),
        ("nothing to hide", ("",), "nothing to hide"),
    ],
)
def test_redact_masks_credentials(text: str, secrets: tuple[str, ...], expected: str) -> None:
    assert redact(text, secrets) == expected


def test_redact_cuts_long_messages() -> None:
    assert len(redact("x" * 5000)) == errors.MAX_MESSAGE_CHARS


def test_kubernetes_error_uses_the_status_message_and_retry_after() -> None:
    status = {
        "kind": "Status",
        "status": "Failure",
        "message": "too many requests, slow down",
        "reason": "TooManyRequests",
        "code": 429,
        "details": {"retryAfterSeconds": 9},
    }
    exc = ApiException(status=429, reason="Too Many Requests")
    exc.body = json.dumps(status)
    error = kubernetes_error(exc, 'create rayclusters "rc"')
    assert error.type == errors.KUBERNETES_THROTTLED
    assert error.message == 'create rayclusters "rc": HTTP 429: too many requests, slow down'
    assert error.next_retry_delay == timedelta(seconds=9)
    assert not error.non_retryable


def test_kubernetes_error_permanent_invalid() -> None:
    exc = ApiException(status=422, reason="Unprocessable Entity")
    exc.body = json.dumps({"kind": "Status", "message": 'RayCluster.ray.io "x" is invalid', "code": 422})
    error = kubernetes_error(exc, "create")
    assert (error.type, error.non_retryable) == (errors.KUBERNETES_INVALID, True)
