"""Telling the workflows that wait for a generation's outcome (the Nexus operation `upgrade_rayservice`,
docs/contract.md §9) how it ended.

A `RayServiceUpgradeWorkflow` asks with the `watch_upgrade` signal; it is answered with the `upgrade_outcome`
signal as soon as the revision history settles that generation (decisions/rayservice/upgrade/outcome.py):
at once when it has settled already, else after the pass that settles it, or when the RayService is
deleted. The watches wait in the state, carried through continue-as-new. A RayService nobody watches sends
nothing: no command is added to its runs.
"""

from __future__ import annotations

import asyncio
import contextlib

from temporalio import workflow
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from wire.nexus import UPGRADE_OUTCOME_SIGNAL, UpgradeOutcome, UpgradeWatch
    from workflows.decisions.rayservice.upgrade.outcome import (
        deleted_outcome,
        settled_watches,
        upgrade_outcome,
    )
    from workflows.rayservice.start import manifest_namespace_and_name
    from workflows.rayservice.state import RayServiceState

__all__ = ["UpgradeWatchers"]


async def _tell(watch: UpgradeWatch, outcome: UpgradeOutcome) -> None:
    # A watcher that is gone (terminated, or its caller gave up) has nobody left to tell.
    with contextlib.suppress(FailureError):
        await workflow.get_external_workflow_handle(watch.workflow_id).signal(UPGRADE_OUTCOME_SIGNAL, outcome)


class UpgradeWatchers:
    def __init__(self, state: RayServiceState) -> None:
        self.state = state

    async def watch(self, watch: UpgradeWatch) -> None:
        """A new watch: answered now when its generation has settled (or the RayService is being deleted),
        else kept until it does."""
        state = self.state
        namespace, name = manifest_namespace_and_name(state.manifest)
        outcome = upgrade_outcome(state.revisions, watch.generation, namespace, name)
        if outcome is None and state.deleting:
            outcome = deleted_outcome(watch.generation, namespace, name)
        if outcome is not None:
            await _tell(watch, outcome)
        elif watch not in state.upgrade_watchers:
            state.upgrade_watchers = [*state.upgrade_watchers, watch]

    async def answer_settled(self) -> None:
        """After a pass: the watches whose generation it settled."""
        state = self.state
        if not state.upgrade_watchers:
            return
        namespace, name = manifest_namespace_and_name(state.manifest)
        answered, state.upgrade_watchers = settled_watches(
            state.upgrade_watchers, state.revisions, namespace, name
        )
        await asyncio.gather(*(_tell(watch, outcome) for watch, outcome in answered))

    async def answer_deleted(self) -> None:
        """The RayService is gone: what settled says so, the rest learn it was deleted first."""
        await self.answer_settled()
        state = self.state
        namespace, name = manifest_namespace_and_name(state.manifest)
        waiting, state.upgrade_watchers = state.upgrade_watchers, []
        await asyncio.gather(
            *(_tell(watch, deleted_outcome(watch.generation, namespace, name)) for watch in waiting)
        )
