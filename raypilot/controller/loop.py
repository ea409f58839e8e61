"""The controller's loop: watches of both kinds feed one queue of object keys; one reconciler takes them one
at a time (observe -> decide -> act, as a workflow does), and a status loop writes a workflow's status back to
its object when what `kubectl get` shows changed, and only then.

Everything it does is safe to repeat: update-with-start is idempotent by workflow id, the generation it last
applied is on the object, and the finalizer is only removed once the run let go of the object. A controller
killed at any point and started again picks up from what Kubernetes and Temporal hold.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from typing import Any

from kubernetes.client.exceptions import ApiException
from temporalio.service import RPCError

from models.crd import KINDS
from models.features import FeatureGates
from models.manifest import parse_rayjob, parse_rayservice
from models.naming import workflow_id
from models.source import ANNOTATION_ADOPTED_CLUSTER, ANNOTATION_ADOPTED_RAYJOB
from raypilot.adopt.kube import adopt_rayjob_leftovers, adopt_rayservice_leftovers
from raypilot.controller.decide import (
    CLOSED,
    Action,
    phase_read_at,
    reconcile_action,
    should_write_status,
    status_patch,
)
from raypilot.controller.kube import ControllerKube, now_rfc3339
from raypilot.controller.objects import (
    object_ref,
    object_view,
    validation_failed_status,
    validation_message,
    workflow_manifest,
)
from raypilot.controller.temporal_io import ControllerTemporal
from raypilot.runs.errors import EXIT_REJECTED, CommandError
from workflows.decisions.rayjob.object import RunState

log = logging.getLogger("raypilot.controller")
Key = tuple[str, str, str]  # kind, namespace, name
RECHECK_SECONDS = 2.0
LEFTOVER_RECHECK_SECONDS = 5.0  # a refused adoption is tried again this often (its cause may be removed)
WATCH_RETRY_SECONDS = 1.0


def _key(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return str(obj["kind"]), str(meta.get("namespace") or "default"), str(meta["name"])


def _owner_reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"]}


class Controller:
    def __init__(
        self, kube: ControllerKube, temporal: ControllerTemporal, gates: FeatureGates, status_interval: float
    ) -> None:
        self.kube, self.temporal, self.gates, self.status_interval = kube, temporal, gates, status_interval
        self.queue: asyncio.Queue[Key] = asyncio.Queue()
        self.queued: set[Key] = set()
        self.objects: dict[Key, dict[str, Any]] = {}  # the newest version of each live object seen
        # uids of objects a watch event showed deleted with the Orphan propagation policy: Kubernetes' own
        # `orphan` finalizer is on the object only until its garbage collector has orphaned the dependents,
        # which may be over before the reconcile reads the object again.
        self.orphan_deletions: set[str] = set()
        # object uid -> the workflow's phase (and a RayJob's jobStatus memo) its status was last read at
        self.seen_phase: dict[str, str] = {}
        self.status_writes = 0  # status subresource writes (the write-back cadence is tested by counting)
        self.actions: list[tuple[Key, Action]] = []
        self.leftover_recheck_seconds = LEFTOVER_RECHECK_SECONDS  # tests look sooner
        self._stopping = threading.Event()

    # ---- feeding the queue --------------------------------------------------------------------------------

    def enqueue(self, key: Key) -> None:
        if key not in self.queued:
            self.queued.add(key)
            self.queue.put_nowait(key)

    def _seen(self, event_type: str, obj: dict[str, Any]) -> None:
        key = _key(obj)
        view = object_view(obj)
        if event_type == "DELETED":
            self.objects.pop(key, None)
            self.orphan_deletions.discard(view.uid)
        else:
            self.objects[key] = obj
            if view.deleting and view.orphaning:
                self.orphan_deletions.add(view.uid)
        self.enqueue(key)

    def _watch_kind(self, kind: str, loop: asyncio.AbstractEventLoop) -> None:
        """List, then watch from the list's resourceVersion; list again when the watch ends or fails."""
        while not self._stopping.is_set():
            try:
                items, version = self.kube.list(kind)
                log.info("%s: %d listed", kind, len(items))
                for item in items:
                    loop.call_soon_threadsafe(self._seen, "ADDED", {**item, "kind": kind})
                for event in self.kube.watch(kind, version, self._stopping.is_set):
                    obj = event["object"]
                    if isinstance(obj, dict) and event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        loop.call_soon_threadsafe(self._seen, event["type"], obj)
            except Exception as error:  # the API server restarted, 410 Gone...: list again
                if self._stopping.is_set():
                    return
                log.warning("watch of %s ended: %s; listing again", kind, error)
                self._stopping.wait(WATCH_RETRY_SECONDS)

    # ---- running ------------------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        watchers = [threading.Thread(target=self._watch_kind, args=(k, loop), daemon=True) for k in KINDS]
        for watcher in watchers:
            watcher.start()
        log.info("watching %s", ", ".join(KINDS))
        tasks = [asyncio.create_task(self._reconcile_forever()), asyncio.create_task(self._status_forever())]
        try:
            await stop.wait()
        finally:
            self._stopping.set()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _reconcile_forever(self) -> None:
        while True:
            key = await self.queue.get()
            self.queued.discard(key)
            try:
                await self.reconcile_key(key)
            except (ApiException, RPCError, CommandError, OSError) as error:
                log.warning("%s/%s/%s: %s; trying again", *key, error)
                self._later(key)
            except Exception:  # a bug must not stop the reconciler for every other object
                log.exception("%s/%s/%s: unexpected failure; trying again later", *key)
                self._later(key, RECHECK_SECONDS * 5)

    def _later(self, key: Key, seconds: float = RECHECK_SECONDS) -> None:
        asyncio.get_running_loop().call_later(seconds, self.enqueue, key)

    async def reconcile_key(self, key: Key) -> Action:
        kind, namespace, name = key
        obj = await asyncio.to_thread(self.kube.get, kind, namespace, name)
        if obj is None:
            return Action.NOTHING
        ref, view = object_ref(obj), object_view(obj)
        if view.uid in self.orphan_deletions:
            view = dataclasses.replace(view, orphaning=True)
        manifest = workflow_manifest(obj)
        message = None if view.deleting else validation_message(manifest, self.gates)
        run, description = await self.temporal.latest(ref)
        action = reconcile_action(view, run, valid=message is None)
        self.actions.append((key, action))
        if action != Action.NOTHING:
            log.info("%s/%s/%s generation %d: %s", *key, view.generation, action.value)
        if action == Action.ADD_FINALIZER:
            await asyncio.to_thread(self.kube.add_finalizer, obj)
        elif action == Action.REJECT and message is not None:
            status = validation_failed_status(kind, message, view.generation, now_rfc3339())
            await asyncio.to_thread(self.kube.patch_status, obj, status_patch(obj.get("status"), status))
            self.status_writes += 1
            await asyncio.to_thread(self.kube.warning_event, obj, "ValidationFailed", message)
            await asyncio.to_thread(self.kube.set_applied_generation, obj, view.generation)
        elif action == Action.START_OR_APPLY:
            starts = run is None or run.state != RunState.RUNNING  # a first run: KubeRay's leftovers count
            if kind == "RayJob" and starts and await self._refused_adoption(key, obj, manifest):
                return action
            if kind == "RayService" and starts:
                await self._adopt_leftovers(obj, manifest)
            try:
                applied = await self.temporal.start_or_apply(ref, manifest, view.uid)
            except CommandError as error:
                if error.exit_code != EXIT_REJECTED:
                    raise
                # The running workflow refused the new spec (KubeRay's update rules): said once a generation.
                await asyncio.to_thread(self.kube.warning_event, obj, "ValidationFailed", str(error))
                await asyncio.to_thread(self.kube.set_applied_generation, obj, view.generation)
                return action
            if applied is not None:
                await asyncio.to_thread(self.kube.set_applied_generation, obj, view.generation)
                self.seen_phase.pop(view.uid, None)  # read its status on the next tick
        elif action == Action.REPLACE_RUN and run is not None and description is not None:
            if run.state.value == "RUNNING":
                await self.temporal.delete_workflow(ref)
            else:
                await self.temporal.delete_finished(ref, description)
            self._later(key)
        elif action in (Action.DELETE_WORKFLOW, Action.LET_GO):
            await self.temporal.delete_workflow(ref, let_go=action == Action.LET_GO)
            self._later(key)  # the finalizer goes once the run has closed
        elif action == Action.DELETE_FINISHED and description is not None:
            await self.temporal.delete_finished(ref, description)
            await asyncio.to_thread(self.kube.remove_finalizer, obj)
        elif action == Action.RELEASE:
            await asyncio.to_thread(self.kube.remove_finalizer, obj)
        return action

    async def _refused_adoption(self, key: Key, obj: dict[str, Any], manifest: dict[str, Any]) -> bool:
        """A RayJob moved over from KubeRay: what KubeRay left becomes this object's and its first run
        continues the Ray job (raypilot.adopt.rayjob). When that cannot be done honestly the RayJob is not
        started: its status and one Warning Event say why, and it is looked at again until the cause is
        gone."""
        meta = obj["metadata"]
        owner = _owner_reference(obj)
        plan = await asyncio.to_thread(
            adopt_rayjob_leftovers, self.kube.api_client, parse_rayjob(manifest), owner
        )
        if plan.adopted is not None:
            log.info("%s/%s: adopted from KubeRay: %s", meta["namespace"], meta["name"], plan.adopted)
            manifest["metadata"]["annotations"][ANNOTATION_ADOPTED_RAYJOB] = plan.adopted.annotation()
        message = plan.refusal
        if message is None:
            return False
        message = f"raypilot does not adopt this RayJob: {message}"
        if (obj.get("status") or {}).get("message") != message:
            status = validation_failed_status("RayJob", message, object_view(obj).generation, now_rfc3339())
            await asyncio.to_thread(self.kube.patch_status, obj, status_patch(obj.get("status"), status))
            self.status_writes += 1
            await asyncio.to_thread(self.kube.warning_event, obj, "AdoptionRefused", message)
        self._later(key, self.leftover_recheck_seconds)
        return True

    async def _adopt_leftovers(self, obj: dict[str, Any], manifest: dict[str, Any]) -> None:
        """A RayService moved over from KubeRay: what KubeRay left (after `--cascade=orphan`) becomes this
        object's, and its first run starts from the cluster that serves (raypilot.adopt)."""
        meta = obj["metadata"]
        plan = await asyncio.to_thread(
            adopt_rayservice_leftovers,
            self.kube.api_client,
            parse_rayservice(manifest),
            _owner_reference(obj),
        )
        if plan.cluster:
            log.info(
                "%s/%s: adopted RayCluster %s (spec matches: %s)",
                meta["namespace"],
                meta["name"],
                plan.cluster,
                plan.spec_matches,
            )
            manifest["metadata"]["annotations"][ANNOTATION_ADOPTED_CLUSTER] = plan.cluster

    # ---- status write-back --------------------------------------------------------------------------------

    async def _status_forever(self) -> None:
        while True:
            try:
                await self.write_back_statuses()
            except (ApiException, RPCError, OSError) as error:
                log.warning("status write-back: %s", error)
            except Exception:  # a bug must not stop the write-back of every other object
                log.exception("status write-back: unexpected failure")
            await asyncio.sleep(self.status_interval)

    async def write_back_statuses(self) -> None:
        """One tick: the phases (and RayJobs' jobStatus memos) of all running workflows in one list; for an
        object whose workflow's phase changed since its status was last read, read it, and write it when a
        printer column changed."""
        phases = await self.temporal.phases()
        for key, obj in list(self.objects.items()):
            view = object_view(obj)
            if view.deleting or not view.uid:
                continue
            ref = object_ref(obj)
            phase = phases.get(workflow_id(ref.kind, ref.namespace, ref.name), CLOSED)
            if self.seen_phase.get(view.uid) == phase:
                continue
            read = await self.temporal.status(ref, view.uid)
            if read is None:
                continue
            status, run_closed = read
            remembered = phase_read_at(phase, run_closed)
            if remembered is None:
                self.seen_phase.pop(view.uid, None)
            else:
                self.seen_phase[view.uid] = remembered
            written = self.objects.get(key, obj).get("status")
            if should_write_status(ref.kind, written, status):
                await asyncio.to_thread(self.kube.patch_status, obj, status_patch(written, status))
                self.status_writes += 1
