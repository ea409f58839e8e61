"""`raypilot apply|status|delete raycronjob/NS/NAME` and `raypilot cronjob trigger|pause|unpause|backfill`: a
RayCronJob is a Temporal Schedule with id `raycronjob/<namespace>/<name>` whose action starts the tick
workflow `RayCronJobTick` with the RayCronJob manifest (workflows/raycronjob/workflow.py); each tick runs one
RayJobWorkflow `rayjob/<namespace>/<cronjob>-<unix minutes>`.

`apply` creates the schedule or updates it (a changed jobTemplate applies to the next runs). `spec.suspend`
pauses it; a schedule paused with `raypilot cronjob pause` stays paused through later applies that do not set
`suspend` (unpause it with `raypilot cronjob unpause`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleBackfill,
    ScheduleCalendarSpec,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleRange,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowExecutionStatus,
)
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.service import RPCError, RPCStatusCode

from activities.cronjob_runs import cronjob_runs_query
from models.raycronjob import schedule_settings
from raypilot.cli.common import Console, client_for, settings_from
from raypilot.runs.errors import CommandError, rejected
from wire.cronjob import CronJobKey
from workflows.decisions.raycronjob.runs import (
    child_rayjob_name,
    rfc3339_utc,
    scheduled_time_from_tick_id,
    tick_workflow_id,
)
from workflows.decisions.raycronjob.schedule import CalendarPlan, SchedulePlan, schedule_plan
from workflows.search_attributes import RAY_CRONJOB, RAY_NAMESPACE, RAY_PHASE

KIND_TEXT: Final = "raycronjob"
TICK_WORKFLOW: Final = "RayCronJobTick"
SUSPEND_NOTE: Final = "suspended: spec.suspend is true"
PAUSE_NOTE: Final = "paused with raypilot cronjob pause"
NEXT_TIMES_SHOWN: Final = 5
CONTROLS: Final = ("trigger", "pause", "unpause", "backfill")


@dataclass(frozen=True)
class CronJobRef:
    namespace: str
    name: str

    @property
    def schedule_id(self) -> str:
        return tick_workflow_id(self.namespace, self.name)


def is_cronjob_ref(text: str) -> bool:
    return text.split("/", 1)[0].lower() == KIND_TEXT


def parse_cronjob_ref(text: str) -> CronJobRef:
    parts = text.split("/")
    if len(parts) != 3 or parts[0].lower() != KIND_TEXT or not parts[1] or not parts[2]:
        raise rejected(f"expected raycronjob/NAMESPACE/NAME, got {text!r}")
    return CronJobRef(parts[1], parts[2])


# ---- the schedule of a RayCronJob ----------------------------------------------------------------------


def _ranges(ranges: Sequence[tuple[int, int]]) -> list[ScheduleRange]:
    return [ScheduleRange(start, end) for start, end in ranges]


def _calendar(plan: CalendarPlan) -> ScheduleCalendarSpec:
    return ScheduleCalendarSpec(
        second=[ScheduleRange(0)],
        minute=_ranges(plan.minutes),
        hour=_ranges(plan.hours),
        day_of_month=_ranges(plan.days_of_month),
        month=_ranges(plan.months),
        day_of_week=_ranges(plan.days_of_week),
    )


def schedule_for(ref: CronJobRef, manifest: dict[str, Any], plan: SchedulePlan, task_queue: str) -> Schedule:
    intervals = (
        [ScheduleIntervalSpec(every=timedelta(seconds=plan.interval_seconds))]
        if plan.interval_seconds
        else []
    )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            TICK_WORKFLOW,
            manifest,
            id=ref.schedule_id,
            task_queue=task_queue,
            typed_search_attributes=TypedSearchAttributes(
                [
                    SearchAttributePair(RAY_NAMESPACE, ref.namespace),
                    SearchAttributePair(RAY_CRONJOB, ref.name),
                ]
            ),
            static_summary=f"a tick of RayCronJob {ref.namespace}/{ref.name}",
        ),
        spec=ScheduleSpec(
            calendars=[_calendar(calendar) for calendar in plan.calendars],
            intervals=intervals,
            time_zone_name=plan.time_zone,
            jitter=timedelta(seconds=plan.jitter_seconds) if plan.jitter_seconds else None,
        ),
        policy=SchedulePolicy(
            overlap=ScheduleOverlapPolicy[plan.overlap],
            catchup_window=timedelta(seconds=plan.catchup_window_seconds),
        ),
        state=ScheduleState(paused=plan.paused, note=SUSPEND_NOTE if plan.paused else None),
    )


async def apply_cronjob(ref: CronJobRef, manifest: dict[str, Any], console: Console) -> str:
    """Creates or updates the schedule; the output line."""
    from models.manifest import parse_raycronjob

    cronjob = parse_raycronjob(manifest)
    plan = schedule_plan(cronjob, schedule_settings(cronjob.metadata.annotations))
    settings = settings_from(console)
    client = await client_for(console)
    schedule = schedule_for(ref, manifest, plan, settings.task_queue)
    target = f"{KIND_TEXT}/{ref.namespace}/{ref.name}"
    try:
        await client.create_schedule(ref.schedule_id, schedule)
        return f"{target} created (schedule {ref.schedule_id})"
    except ScheduleAlreadyRunningError:
        pass
    handle = client.get_schedule_handle(ref.schedule_id)
    kept: list[str] = []

    def updated(current: ScheduleUpdateInput) -> ScheduleUpdate:
        state = current.description.schedule.state
        if not plan.paused and state.paused and state.note != SUSPEND_NOTE:
            # Paused by hand (`raypilot cronjob pause`): an apply without suspend leaves it paused.
            kept.append(state.note or "")
            return ScheduleUpdate(
                schedule=replace(schedule, state=ScheduleState(paused=True, note=state.note))
            )
        return ScheduleUpdate(schedule=schedule)

    await handle.update(updated)
    if kept:
        return (
            f"{target} configured (still paused: {kept[0]}; `raypilot cronjob unpause {target}` resumes it)"
        )
    return f"{target} configured"


# ---- status ---------------------------------------------------------------------------------------------


async def cronjob_runs(client: Client, ref: CronJobRef) -> list[dict[str, Any]]:
    """The RayJobs of the RayCronJob that Temporal still lists (latest run of each), oldest first."""
    latest: dict[str, Any] = {}
    async for execution in client.list_workflows(cronjob_runs_query(CronJobKey(ref.namespace, ref.name))):
        known = latest.get(execution.id)
        if known is None or execution.start_time > known.start_time:
            latest[execution.id] = execution
    runs = []
    for workflow_id, execution in sorted(latest.items()):
        state = execution.status or WorkflowExecutionStatus.RUNNING
        runs.append(
            {
                "name": workflow_id.rsplit("/", 1)[-1],
                "workflowId": workflow_id,
                "workflowState": state.name,
                "jobDeploymentStatus": execution.typed_search_attributes.get(RAY_PHASE) or "",
            }
        )
    return runs


def cronjob_status(description: ScheduleDescription, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """KubeRay's status (lastScheduleTime: the newest tick's nominal time) plus the schedule's state."""
    ticks = [
        scheduled_time_from_tick_id(action.action.workflow_id)
        for action in description.info.recent_actions
        if isinstance(action.action, ScheduleActionExecutionStartWorkflow)
    ]
    last = max((tick for tick in ticks if tick is not None), default=None)
    state = description.schedule.state
    return {
        "lastScheduleTime": rfc3339_utc(last) if last else None,
        "nextScheduleTimes": [
            rfc3339_utc(moment) for moment in description.info.next_action_times[:NEXT_TIMES_SHOWN]
        ],
        "paused": state.paused,
        "note": state.note or "",
        "runningTicks": len(description.info.running_actions),
        "runs": runs,
    }


def render_cronjob_status(ref: CronJobRef, status: dict[str, Any]) -> str:
    lines = [
        f"{KIND_TEXT}/{ref.namespace}/{ref.name}  (schedule {ref.schedule_id})",
        f"last schedule time: {status['lastScheduleTime'] or '-'}",
        f"paused: {'yes' if status['paused'] else 'no'}"
        + (f" ({status['note']})" if status["paused"] else ""),
        "next runs: " + (", ".join(status["nextScheduleTimes"]) or "-"),
        f"RayJobs ({len(status['runs'])}):",
    ]
    for run in status["runs"]:
        phase = run["jobDeploymentStatus"] or "-"
        lines.append(f"  {run['name']:<48} {phase:<12} workflow {run['workflowState'].lower()}")
    return "\n".join(lines)


async def show_cronjob_status(ref_text: str, console: Console, *, output: str) -> int:
    ref = parse_cronjob_ref(ref_text)
    client = await client_for(console)
    try:
        description = await client.get_schedule_handle(ref.schedule_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise CommandError(f"no raycronjob {ref.namespace}/{ref.name}") from None
        raise
    status = cronjob_status(description, await cronjob_runs(client, ref))
    console.out(
        json.dumps(status, indent=2, sort_keys=True)
        if output == "json"
        else render_cronjob_status(ref, status)
    )
    return 0


# ---- delete ---------------------------------------------------------------------------------------------


async def delete_cronjob(ref_text: str, console: Console, *, wait: bool) -> int:
    """The schedule first (no new tick), then its running ticks (they hold nothing: their RayJobs outlive
    them), then each RayJob as `raypilot delete rayjob/...` deletes it: owner references in KubeRay."""
    from raypilot.cli.control import delete_object

    ref = parse_cronjob_ref(ref_text)
    client = await client_for(console)
    found = True
    try:
        await client.get_schedule_handle(ref.schedule_id).delete()
    except RPCError as error:
        if error.status != RPCStatusCode.NOT_FOUND:
            raise
        found = False
    query = (
        f"WorkflowType = '{TICK_WORKFLOW}' AND RayNamespace = '{ref.namespace}' "
        f"AND RayCronJob = '{ref.name}' AND ExecutionStatus = 'Running'"
    )
    # A RayJob a tick has just started may not be listed yet: each running tick names its RayJob too.
    names = set()
    async for tick in client.list_workflows(query):
        scheduled = scheduled_time_from_tick_id(tick.id)
        if scheduled is not None:
            names.add(child_rayjob_name(ref.name, scheduled))
        try:
            await client.get_workflow_handle(tick.id, run_id=tick.run_id).terminate(
                "its RayCronJob was deleted"
            )
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
    names |= {run["name"] for run in await cronjob_runs(client, ref)}
    if not found and not names:
        raise CommandError(f"no raycronjob {ref.namespace}/{ref.name}")
    for name in sorted(names):
        try:
            await delete_object(f"rayjob/{ref.namespace}/{name}", console, wait=wait)
        except CommandError as error:
            if not str(error).startswith("no rayjob"):  # else: a tick terminated before it started its RayJob
                raise
    console.out(f"{KIND_TEXT}/{ref.namespace}/{ref.name} deleted ({len(names)} RayJobs)")
    return 0


# ---- schedule controls ----------------------------------------------------------------------------------


def parse_time(text: str, option: str) -> datetime:
    """An RFC 3339 / ISO 8601 time; without an offset it is UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise rejected(f"{option}: expected a time such as 2026-01-31T09:00:00Z, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def cronjob_control(
    control: str, ref_text: str, console: Console, *, note: str | None, start: str | None, end: str | None
) -> int:
    ref = parse_cronjob_ref(ref_text)
    if control == "backfill" and (start is None or end is None):
        raise rejected("backfill needs --from TIME and --to TIME")
    client = await client_for(console)
    handle = client.get_schedule_handle(ref.schedule_id)
    target = f"{KIND_TEXT}/{ref.namespace}/{ref.name}"
    try:
        if control == "trigger":
            await handle.trigger()
            message = "triggered (a run now, under its concurrencyPolicy)"
        elif control == "pause":
            await handle.pause(note=note or PAUSE_NOTE)
            message = "paused"
        elif control == "unpause":
            await handle.unpause(note=note or "unpaused with raypilot cronjob unpause")
            message = "unpaused"
        else:
            start_at, end_at = parse_time(start or "", "--from"), parse_time(end or "", "--to")
            if end_at <= start_at:
                raise rejected("--to must be after --from")
            description = await handle.describe()
            await handle.backfill(
                ScheduleBackfill(
                    start_at=start_at, end_at=end_at, overlap=description.schedule.policy.overlap
                )
            )
            message = f"backfill from {rfc3339_utc(start_at)} to {rfc3339_utc(end_at)} requested"
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise CommandError(f"no raycronjob {ref.namespace}/{ref.name}") from None
        raise
    console.out(f"{target} {message}")
    return 0
