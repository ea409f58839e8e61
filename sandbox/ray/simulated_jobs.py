"""The Jobs REST API of the simulated dashboard (Ray 2.60 shapes, texts and status codes).

A job's life is driven by its entrypoint (see `simulated_entrypoint`): PENDING for `job_pending_s`, RUNNING
while the planned steps play (appending log lines), then SUCCEEDED or FAILED with
JOB_ENTRYPOINT_COMMAND_ERROR; STOPPED after a stop request. Jobs live in memory and die with the dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from sandbox.ray.simulated_entrypoint import EntrypointPlan, plan_entrypoint
from sandbox.ray.simulated_timings import SimulationTimings

TERMINAL_STATES = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
DEFAULT_MESSAGES = {
    "PENDING": "Job has not started yet.",
    "RUNNING": "Job is currently running.",
    "STOPPED": "Job was intentionally stopped.",
    "SUCCEEDED": "Job finished successfully.",
    "FAILED": "Job failed.",
}
LOG_TAIL_CHARS = 20000
_SUBMIT_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "entrypoint": (str,),
    "submission_id": (str,),
    "job_id": (str,),
    "runtime_env": (dict,),
    "metadata": (dict,),
    "entrypoint_num_cpus": (int, float),
    "entrypoint_num_gpus": (int, float),
    "entrypoint_memory": (int,),
    "entrypoint_resources": (dict,),
    "entrypoint_label_selector": (dict,),
}


def _now_ms() -> int:
    return int(time.time() * 1000)


def _log_timestamp() -> str:
    now = datetime.datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S,") + f"{now.microsecond // 1000:03d}"


def _traceback_text(error_line: str) -> str:
    """Ray answers server-side errors with a formatted traceback; clients match on its last line."""
    return f'Traceback (most recent call last):\n  File "simulated_dashboard.py", in handler\n{error_line}\n'


def submit_request_error(body: Any) -> str | None:
    """Ray's TypeError text for a malformed JobSubmitRequest, or None when the body is acceptable."""
    if not isinstance(body, dict):
        return f"TypeError: JobSubmitRequest() argument after ** must be a mapping, not {type(body).__name__}"
    unknown = sorted(set(body) - set(_SUBMIT_FIELD_TYPES))
    if unknown:
        return f"TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '{unknown[0]}'"
    if "entrypoint" not in body:
        return "TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'"
    for name, types in _SUBMIT_FIELD_TYPES.items():
        value = body.get(name)
        if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
            return f"TypeError: {name} must be a {types[0].__name__}, got {type(value)}"
    return None


@dataclass
class SimulatedJob:
    submission_id: str
    entrypoint: str
    metadata: dict[str, str] | None
    runtime_env: dict[str, Any] | None
    start_time: int = field(default_factory=_now_ms)
    status: str = "PENDING"
    message: str | None = None
    error_type: str | None = None
    end_time: int | None = None
    driver_exit_code: int | None = None
    driver_agent_http_address: str | None = None
    driver_node_id: str | None = None
    logs: str = ""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def details(self) -> dict[str, Any]:
        return {
            "type": "SUBMISSION",
            "job_id": None,  # only set once an entrypoint calls ray.init(), which the simulation never does
            "submission_id": self.submission_id,
            "driver_info": None,
            "status": self.status,
            "entrypoint": self.entrypoint,
            "message": self.message if self.message is not None else DEFAULT_MESSAGES[self.status],
            "error_type": self.error_type,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "metadata": self.metadata,
            "runtime_env": self.runtime_env,
            "driver_agent_http_address": self.driver_agent_http_address,
            "driver_node_id": self.driver_node_id,
            "driver_exit_code": self.driver_exit_code,
        }

    def append_log(self, line: str) -> None:
        self.logs += line + "\n"
        self._notify()

    def finish(self, status: str, *, message: str | None = None, exit_code: int | None = None) -> None:
        self.status = status
        self.message = message
        self.driver_exit_code = exit_code
        self.end_time = _now_ms()
        if status == "FAILED":
            self.error_type = "JOB_ENTRYPOINT_COMMAND_ERROR"
        self._notify()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class SimulatedJobs:
    """Job state and the `/api/jobs/` and `/api/packages/` routes."""

    def __init__(
        self,
        timings: SimulationTimings,
        *,
        agent_address: str,
        node_id: str,
        drivers: Callable[[str], EntrypointPlan | None] | None = None,
    ) -> None:
        self._timings = timings
        # Entrypoints that talk to the cluster's Ray (e.g. a driver reading Serve's controller) are planned
        # by `drivers` when they start running; None leaves them to the entrypoint interpreter.
        self._drivers = drivers
        self._agent_address = agent_address
        self._node_id = node_id
        self.jobs: dict[str, SimulatedJob] = {}
        self._packages: dict[str, bytes] = {}
        self._background: set[asyncio.Task[None]] = set()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/api/jobs/", self.submit)
        app.router.add_get("/api/jobs/", self.list_jobs)
        app.router.add_get("/api/jobs/{job_id}", self.get_job)
        app.router.add_post("/api/jobs/{job_id}/stop", self.stop_job)
        app.router.add_delete("/api/jobs/{job_id}", self.delete_job)
        app.router.add_get("/api/jobs/{job_id}/logs", self.get_logs)
        app.router.add_get("/api/jobs/{job_id}/logs/tail", self.tail_logs)
        app.router.add_get("/api/packages/{protocol}/{name}", self.get_package)
        app.router.add_put("/api/packages/{protocol}/{name}", self.put_package)

    async def close(self) -> None:
        """Cancel running jobs (the dashboard is going away, taking its jobs with it)."""
        tasks = [job.task for job in self.jobs.values() if job.task is not None] + list(self._background)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.jobs.clear()

    def _find(self, request: web.Request) -> SimulatedJob:
        job_id = request.match_info["job_id"]
        job = self.jobs.get(job_id)
        if job is None:
            raise web.HTTPNotFound(text=f"Job {job_id} does not exist")
        return job

    async def submit(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=500, text="500 Internal Server Error\n\nServer got itself in trouble")
        error = submit_request_error(body)
        if error is not None:
            return web.Response(status=400, text=_traceback_text(error))
        submission_id = body.get("submission_id") or body.get("job_id") or _new_submission_id()
        if submission_id in self.jobs:
            return web.Response(
                status=500,
                text=_traceback_text(
                    "RuntimeError: Request failed with status code 400: Traceback (most recent call last):\n"
                    f"ValueError: Job with submission_id {submission_id} already exists. "
                    "Please use a different submission_id.\n."
                ),
            )
        job = SimulatedJob(
            submission_id=submission_id,
            entrypoint=body["entrypoint"],
            metadata=body.get("metadata"),
            runtime_env=body.get("runtime_env"),
        )
        self.jobs[submission_id] = job
        job.task = asyncio.create_task(self._run(job))
        return web.json_response({"job_id": submission_id, "submission_id": submission_id})

    async def _run(self, job: SimulatedJob) -> None:
        timings = self._timings
        plan = plan_entrypoint(job.entrypoint, command_s=timings.command_s, sleep_scale=timings.sleep_scale)
        job.append_log(f"{_log_timestamp()}\tINFO job_manager.py:581 -- Runtime env is setting up.")
        await asyncio.sleep(timings.job_pending_s)
        job.status = "RUNNING"
        job.driver_agent_http_address = self._agent_address
        job.driver_node_id = self._node_id
        job.append_log(f"Running entrypoint for job {job.submission_id}: {job.entrypoint}")
        driven = self._drivers(job.entrypoint) if self._drivers is not None else None
        plan = driven if driven is not None else plan
        for step in plan.steps:
            if step.seconds > 0:
                await asyncio.sleep(step.seconds)
            if step.output is not None:
                job.append_log(step.output)
        if plan.exit_code == 0:
            job.finish("SUCCEEDED", exit_code=0)
            return
        tail = job.logs[-LOG_TAIL_CHARS:]
        job.finish(
            "FAILED",
            exit_code=plan.exit_code,
            message=(
                f"Job entrypoint command failed with exit code {plan.exit_code}, "
                f"last available logs (truncated to 20,000 chars):\n{tail}"
            ),
        )

    async def list_jobs(self, request: web.Request) -> web.Response:
        return web.json_response([job.details() for job in self.jobs.values()])

    async def get_job(self, request: web.Request) -> web.Response:
        return web.json_response(self._find(request).details())

    async def stop_job(self, request: web.Request) -> web.Response:
        job = self._find(request)
        if job.status in TERMINAL_STATES:
            return web.json_response({"stopped": False})
        if job.task is not None:
            job.task.cancel()
        stopper = asyncio.create_task(self._mark_stopped(job))
        self._background.add(stopper)
        stopper.add_done_callback(self._background.discard)
        return web.json_response({"stopped": True})

    async def _mark_stopped(self, job: SimulatedJob) -> None:
        await asyncio.sleep(self._timings.job_stop_s)
        if job.status not in TERMINAL_STATES:
            job.finish("STOPPED")

    async def delete_job(self, request: web.Request) -> web.Response:
        job = self._find(request)
        if job.status not in TERMINAL_STATES:
            return web.Response(
                status=500,
                text=_traceback_text(
                    f"RuntimeError: Attempted to delete job '{job.submission_id}', "
                    f"but it is in a non-terminal state {job.status}."
                ),
            )
        del self.jobs[job.submission_id]
        return web.json_response({"deleted": True})

    async def get_logs(self, request: web.Request) -> web.Response:
        return web.json_response({"logs": self._find(request).logs})

    async def tail_logs(self, request: web.Request) -> web.StreamResponse:
        job = self._find(request)
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        sent = 0
        while True:
            waiter = job.changed
            if len(job.logs) > sent:
                await socket.send_str(job.logs[sent:])
                sent = len(job.logs)
            if job.status in TERMINAL_STATES:
                break
            await waiter.wait()
        await socket.close()
        return socket

    async def get_package(self, request: web.Request) -> web.Response:
        uri = f"{request.match_info['protocol']}://{request.match_info['name']}"
        if uri not in self._packages:
            return web.Response(status=404, text=f"Package {uri} does not exist")
        return web.Response()

    async def put_package(self, request: web.Request) -> web.Response:
        uri = f"{request.match_info['protocol']}://{request.match_info['name']}"
        self._packages[uri] = await request.read()
        return web.Response()


def _new_submission_id() -> str:
    return "raysubmit_" + "".join(random.choices(string.ascii_letters + string.digits, k=16))
