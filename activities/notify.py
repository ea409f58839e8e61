"""The webhook of `raypilot.io/notify` (issue #34): read the URL from its Secret, POST one notification.

The URL lives only here, for one attempt: it is read from the Secret at each attempt (a rotated Secret is
used at the next retry), never returned, never logged, and masked out of every error message (an error's
message is recorded in the workflow's history).

Errors are classified for the retry policy of `IO.NOTIFY` (workflows/kit/calls.py), bounded by its
schedule-to-close: a 4xx other than 408 and 429 will not succeed as it is (non-retryable); 408, 429 (after
its Retry-After), 5xx, timeouts and transport errors are retried, as is a Secret not there yet (it may be
created after the object that names it, as GitOps tools often do). A URL that is not http(s) never will be.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Final

import httpx
from temporalio.exceptions import ApplicationError

from activities.dependencies import ActivityDependencies
from activities.errors import redact, retry_after_seconds
from wire import stubs
from wire.notify import SendNotification, webhook_body
from wire.stubs.common import implements

__all__ = [
    "NOTIFY_BAD_URL",
    "NOTIFY_SECRET_MISSING",
    "NOTIFY_WEBHOOK_FAILED",
    "NOTIFY_WEBHOOK_REJECTED",
    "NotifyActivities",
]

NOTIFY_SECRET_MISSING: Final = "NotifySecretMissing"
NOTIFY_BAD_URL: Final = "NotifyBadUrl"
NOTIFY_WEBHOOK_REJECTED: Final = "NotifyWebhookRejected"
NOTIFY_WEBHOOK_FAILED: Final = "NotifyWebhookFailed"
_RETRYABLE_4XX: Final = frozenset({408, 429})
WEBHOOK_TIMEOUT_S: Final = 10.0
MAX_DETAIL_CHARS: Final = 200


def _failure(status: int, detail: str, url: str, retry_after: float | None = None) -> ApplicationError:
    """The error of an answer other than 2xx, "webhook: HTTP <status>: <detail>" without the URL. Redirects
    are not followed (a webhook that moved must be updated in its Secret): a 3xx is rejected like a 4xx."""
    rejected = status < 500 and status not in _RETRYABLE_4XX
    message = redact(f"webhook: HTTP {status}" + (f": {detail[:MAX_DETAIL_CHARS]}" if detail else ""), [url])
    return ApplicationError(
        message,
        type=NOTIFY_WEBHOOK_REJECTED if rejected else NOTIFY_WEBHOOK_FAILED,
        non_retryable=rejected,
        next_retry_delay=timedelta(seconds=retry_after) if retry_after is not None else None,
    )


class NotifyActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    async def _webhook_url(self, request: SendNotification) -> str:
        namespace = request.secret_namespace_or_own()
        url = await self.dependencies.apiserver().read_secret_value(
            namespace, request.secret_name, request.secret_key
        )
        where = f'secret "{request.secret_name}" in namespace "{namespace}"'
        if not url:
            raise ApplicationError(
                f"raypilot.io/notify: {where} has no key {request.secret_key} (or does not exist yet)",
                type=NOTIFY_SECRET_MISSING,
            )
        if not url.startswith(("http://", "https://")):
            raise ApplicationError(
                f"raypilot.io/notify: key {request.secret_key} of {where} is not an http(s) URL",
                type=NOTIFY_BAD_URL,
                non_retryable=True,
            )
        return url

    @implements(stubs.send_notification)
    async def send_notification(self, request: SendNotification) -> int:
        """POST the notification; its answer's status (2xx). Idempotent for a receiver that
        deduplicates on the CloudEvents id (the Slack text ends with it)."""
        url = await self._webhook_url(request)
        content_type, body = webhook_body(request)
        headers = {"Content-Type": content_type}
        try:
            response = await self.dependencies.http.post(
                url, content=json.dumps(body).encode(), headers=headers, timeout=WEBHOOK_TIMEOUT_S
            )
        except httpx.HTTPError as error:
            # httpx may name the URL in its message (an invalid URL, some transport errors).
            message = redact(f"webhook: no response: {type(error).__name__}: {error}", [url])
            raise ApplicationError(message, type=NOTIFY_WEBHOOK_FAILED) from None
        if not 200 <= response.status_code < 300:
            raise _failure(response.status_code, response.text, url, retry_after_seconds(response.headers))
        return response.status_code
