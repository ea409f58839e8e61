"""The first attempt of a RayJob adopted from KubeRay (`raypilot.io/adopted-rayjob`, raypilot.adopt.rayjob):
it continues on the cluster KubeRay left, with the Ray job's submission id, instead of creating and submitting
anew (pure, table-tested)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from models.naming import SUFFIX_ALPHABET
from models.rayjob import JobSubmissionMode, RayJob, RayJobStatus
from models.source import AdoptedRayJob
from wire.dashboard import SubmittedJob
from workflows.decisions.rayjob.status import kube_time
from workflows.decisions.rayjob.transitions import start_attempt


@dataclass(frozen=True)
class AdoptedParts:
    """What of the first attempt already exists, so the workflow neither creates it again (its create would
    take an object without this run's `raypilot.io/rayjob-uid` for an earlier run's leftover and delete it)
    nor submits the Ray job a second time."""

    cluster: bool
    head_service: bool
    submitter: bool
    submitted: bool
    lookup: bool  # the submission id is looked up on the dashboard once it is known (HTTPMode)


def adopted_attempt(job: RayJob, adopted: AdoptedRayJob, now: datetime, rand: random.Random) -> RayJobStatus:
    """New -> Initializing on what KubeRay left: its cluster (the clusterSelector's in that mode) and the
    Ray job's submission id (a new one as usual when none was submitted yet); KubeRay's start time when
    known (the attempt's deadlines count from it, as they did under KubeRay), else now."""
    seeded = job.status.model_copy(update={"job_id": adopted.job_id, "ray_cluster_name": adopted.cluster})
    status = start_attempt(job.model_copy(update={"status": seeded}), now, rand)
    started = _parse_time(adopted.start_time)
    if started is not None and started <= now:
        status = status.model_copy(update={"start_time": kube_time(started)})
    return status


def adopted_parts(job: RayJob, adopted: AdoptedRayJob) -> AdoptedParts:
    """HTTPMode counts as submitted when KubeRay's submission id is known (a job it cannot find is submitted
    again under that id, as KubeRay does)."""
    return AdoptedParts(
        cluster=bool(adopted.cluster),
        head_service=adopted.head_service,
        submitter=adopted.submitter,
        submitted=bool(adopted.job_id) and job.spec.submission_mode == JobSubmissionMode.HTTP_MODE,
        lookup=adopted.lookup and not adopted.job_id,
    )


def kuberay_submission(job: RayJob, jobs: list[SubmittedJob]) -> str:
    """The submission id of the Ray job KubeRay submitted for the RayJob on its cluster ("" none): by
    KubeRay's rules, a submission id `<name>-<5 random chars>` (`spec.jobId` when set), the RayJob's
    entrypoint (trimmed, as KubeRay sends it) and its metadata; the newest when several match."""
    name = job.metadata.name
    pattern = re.compile(rf"{re.escape(name)}-[{SUFFIX_ALPHABET}]{{5}}")
    wanted_metadata = job.spec.metadata or {}
    entrypoint = job.spec.entrypoint.strip()
    matches = [
        candidate
        for candidate in jobs
        if (
            candidate.submission_id == job.spec.job_id
            if job.spec.job_id
            else pattern.fullmatch(candidate.submission_id) is not None
        )
        and candidate.entrypoint.strip() == entrypoint
        and all((candidate.metadata or {}).get(k) == v for k, v in wanted_metadata.items())
    ]
    if not matches:
        return ""
    return max(matches, key=lambda m: (m.start_time_ms, m.submission_id)).submission_id


def _parse_time(text: str) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
