"""A workflow that sends one notification under the real IO.NOTIFY policy, for
tests/activities/test_notify.py: what its activity's classified errors make of the retries."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.notify import SendNotification

from workflows.kit.calls import IO, call


@workflow.defn(name="SendOneNotification")
class SendOneNotification:
    @workflow.run
    async def run(self, request: SendNotification) -> int:
        return await call(stubs.send_notification, request, IO.NOTIFY)
