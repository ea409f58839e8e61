"""What a RayJob's KubeRay leftovers turn into (raypilot.adopt.rayjob): adopted and continued with the Ray
job's submission id, or refused saying why; and the first attempt of an adopted run
(workflows.decisions.rayjob.adoption)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest

from models.manifest import parse_rayjob
from models.rayjob import JobDeploymentStatus, RayJob
from models.source import AdoptedRayJob, adopted_rayjob
from raypilot.adopt.rayjob import (
    apply_refusal,
    rayjob_adoption_plan,
    submission_id_of_submitter,
    unadopted_leftovers,
)
from tests.integration.rayjob_support import example
from wire.dashboard import SubmittedJob
from workflows.decisions.rayjob.adoption import adopted_attempt, adopted_parts, kuberay_submission

OWNER = {"apiVersion": "raypilot.io/v1", "kind": "RayJob", "name": "job", "uid": "u-1"}
STARTED = "2026-01-02T03:04:05Z"


def _job(mode: str = "K8sJobMode", **spec: Any) -> RayJob:
    manifest = example("rayjob-httpmode", "ns", rename="job", submissionMode=mode, **spec)
    return parse_rayjob(manifest)


def _obj(name: str, *, owner_uid: str | None = None, rayjob_uid: str = "", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": STARTED, "annotations": {}}
    if rayjob_uid:
        meta["annotations"]["raypilot.io/rayjob-uid"] = rayjob_uid
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "RayJob", "name": "job", "uid": owner_uid}]
    return {"metadata": meta, **extra}


def _submitter(env_id: str = "job-x7k2p", args_id: str = "") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ray-job-submitter", "env": []}
    if env_id:
        container["env"].append({"name": "RAY_JOB_SUBMISSION_ID", "value": env_id})
    if args_id:
        container["args"] = [f"ray job submit --no-wait --submission-id {args_id} -- python x.py"]
    return _obj("job", spec={"template": {"spec": {"containers": [container]}}})


@pytest.mark.parametrize(
    ("env_id", "args_id", "expected"),
    [("job-x7k2p", "", "job-x7k2p"), ("", "job-b2c4d", "job-b2c4d"), ("", "", "")],
)
def test_the_submission_id_is_read_from_the_submitters_env_or_its_command(
    env_id: str, args_id: str, expected: str
) -> None:
    assert submission_id_of_submitter(_submitter(env_id, args_id)) == expected


def test_a_running_k8sjobmode_rayjob_is_adopted_with_its_cluster_submitter_and_submission_id() -> None:
    plan = rayjob_adoption_plan(_job(), [_obj("job-abcde")], _submitter(), _obj("job-head-svc"), OWNER)
    assert plan.refusal is None
    assert plan.adopted == AdoptedRayJob("job-abcde", "job-x7k2p", True, True, STARTED)
    assert [(p.kind, p.name) for p in plan.patches] == [
        ("RayCluster", "job-abcde"),
        ("Job", "job"),
        ("Service", "job-head-svc"),
    ]
    meta = plan.patches[0].patch["metadata"]
    assert meta["annotations"] == {"raypilot.io/workflow-id": "rayjob/ns/job"}
    assert meta["labels"]["app.kubernetes.io/created-by"] == "raypilot"
    assert meta["ownerReferences"] == [{**OWNER, "controller": True, "blockOwnerDeletion": True}]
    # The annotation the workflow gets round-trips.
    annotation = {"raypilot.io/adopted-rayjob": plan.adopted.annotation()}
    assert adopted_rayjob(annotation) == plan.adopted


@pytest.mark.parametrize(
    ("case", "job", "clusters", "submitter", "adopted", "refused"),
    [
        ("nothing left", _job(), [], None, None, None),
        ("a raypilot run's own cluster", _job(), [_obj("job-a", rayjob_uid="r1")], None, None, None),
        (
            "initializing: no submitter yet",
            _job(),
            [_obj("job-a")],
            None,
            AdoptedRayJob("job-a", "", start_time=STARTED),
            None,
        ),
        (
            "spec.jobId fixes the id",
            _job("HTTPMode", jobId="mine"),
            [_obj("job-a")],
            None,
            AdoptedRayJob("job-a", "mine", start_time=STARTED),
            None,
        ),
        (
            "HTTPMode: looked up on the dashboard",
            _job("HTTPMode"),
            [_obj("job-a")],
            None,
            AdoptedRayJob("job-a", "", start_time=STARTED, lookup=True),
            None,
        ),
        (
            "SidecarMode: the id is unknown",
            _job("SidecarMode"),
            [_obj("job-a")],
            None,
            None,
            "in SidecarMode",
        ),
        (
            "KubeRay still owns it",
            _job(),
            [_obj("job-a", owner_uid="ray-io")],
            None,
            None,
            "still owned by RayJob/job",
        ),
        ("several clusters", _job(), [_obj("job-a"), _obj("job-b")], None, None, "several RayClusters"),
        ("finished, cluster deleted", _job(), [], _submitter(), None, "its RayCluster is gone"),
        (
            "a submitter without an id",
            _job(),
            [_obj("job-a")],
            _submitter(""),
            None,
            "carries no submission id",
        ),
        (
            "adopted already (same owner)",
            _job(),
            [_obj("job-a", owner_uid="u-1")],
            None,
            AdoptedRayJob("job-a", "", start_time=STARTED),
            None,
        ),
    ],
)
def test_leftovers_are_adopted_or_refused_saying_why(
    case: str,
    job: RayJob,
    clusters: list[dict[str, Any]],
    submitter: dict[str, Any] | None,
    adopted: AdoptedRayJob | None,
    refused: str | None,
) -> None:
    plan = rayjob_adoption_plan(job, clusters, submitter, None, OWNER)
    assert plan.adopted == adopted, case
    if refused is None:
        assert plan.refusal is None, case
    else:
        assert plan.refusal is not None, case
        assert refused in plan.refusal, case
        assert plan.patches == [], case


def test_a_clusterselector_rayjob_adopts_only_its_submitter_never_the_shared_cluster() -> None:
    job = _job(clusterSelector={"ray.io/cluster": "shared"}, rayClusterSpec=None)
    plan = rayjob_adoption_plan(job, [_obj("shared")], _submitter(), None, None)
    assert plan.adopted == AdoptedRayJob("", "job-x7k2p", True, False, STARTED)
    assert [(p.kind, p.name) for p in plan.patches] == [("Job", "job")]
    assert "ownerReferences" not in plan.patches[0].patch["metadata"]


def test_plain_apply_refuses_only_while_unadopted_kuberay_objects_exist_and_points_at_adopt() -> None:
    adopted = _obj("job-a")
    adopted["metadata"]["annotations"]["raypilot.io/workflow-id"] = "rayjob/ns/job"
    kuberay = {**_obj("job-b"), "kind": "RayCluster"}
    assert unadopted_leftovers([adopted]) == []
    assert apply_refusal("ns", "job", []) is None
    message = apply_refusal("ns", "job", unadopted_leftovers([adopted, kuberay]))
    assert message is not None
    assert "KubeRay's RayCluster/job-b of this RayJob are still there" in message
    assert "raypilot adopt rayjob/ns/job -f FILE" in message


NOW = datetime(2026, 1, 2, 4, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("mode", "adopted", "job_id", "start", "submitted"),
    [
        ("K8sJobMode", AdoptedRayJob("job-a", "job-x7k2p", True, True, STARTED), "job-x7k2p", STARTED, False),
        ("HTTPMode", AdoptedRayJob("job-a", "mine", start_time=STARTED), "mine", STARTED, True),
        # Nothing submitted yet: a new id as usual; a start time in the future is not believed.
        (
            "K8sJobMode",
            AdoptedRayJob("job-a", "", start_time="2026-01-03T00:00:00Z"),
            "job-",
            "2026-01-02T04:00:00Z",
            False,
        ),
    ],
)
def test_the_first_attempt_of_an_adopted_rayjob_continues_on_kuberays_cluster_and_ray_job(
    mode: str, adopted: AdoptedRayJob, job_id: str, start: str, submitted: bool
) -> None:
    job = _job(mode)
    status = adopted_attempt(job, adopted, NOW, random.Random(1))
    assert status.job_deployment_status == JobDeploymentStatus.INITIALIZING
    assert status.ray_cluster_name == "job-a"
    assert status.job_id.startswith(job_id)
    assert len(status.job_id) == (len(job_id) if adopted.job_id else len("job-") + 5)
    assert status.start_time is not None
    assert status.start_time.strftime("%Y-%m-%dT%H:%M:%SZ") == start
    parts = adopted_parts(job, adopted)
    assert (parts.cluster, parts.submitter, parts.head_service, parts.submitted) == (
        True,
        adopted.submitter,
        adopted.head_service,
        submitted,
    )


@pytest.mark.parametrize(
    "text", ["", "not json", "[]", '{"cluster": 3}', '{"submitter": "yes"}', '{"lookup": 1}']
)
def test_an_unreadable_adoption_annotation_counts_as_none(text: str) -> None:
    assert adopted_rayjob({"raypilot.io/adopted-rayjob": text}) is None


def _submitted(submission_id: str, entrypoint: str, start: int, **metadata: str) -> SubmittedJob:
    return SubmittedJob(submission_id, entrypoint, metadata or None, "RUNNING", start)


@pytest.mark.parametrize(
    ("case", "spec", "jobs", "expected"),
    [
        ("none submitted", {}, [], ""),
        (
            "KubeRay's id, entrypoint, metadata",
            {},
            [_submitted("job-b2c4d", "python x.py", 1, team="a")],
            "job-b2c4d",
        ),
        (
            "entrypoint trimmed as KubeRay sends it",
            {"entrypoint": " python x.py "},
            [_submitted("job-b2c4d", "python x.py", 1, team="a")],
            "job-b2c4d",
        ),
        ("another entrypoint", {}, [_submitted("job-b2c4d", "python y.py", 1, team="a")], ""),
        ("other metadata", {}, [_submitted("job-b2c4d", "python x.py", 1, team="b")], ""),
        ("not KubeRay's id pattern", {}, [_submitted("raysubmit_X1", "python x.py", 1, team="a")], ""),
        ("a vowel is not in the alphabet", {}, [_submitted("job-abcde", "python x.py", 1, team="a")], ""),
        ("another RayJob's", {}, [_submitted("job2-b2c4d", "python x.py", 1, team="a")], ""),
        (
            "spec.jobId wins",
            {"jobId": "mine"},
            [
                _submitted("mine", "python x.py", 1, team="a"),
                _submitted("job-b2c4d", "python x.py", 2, team="a"),
            ],
            "mine",
        ),
        (
            "the newest of several",
            {},
            [
                _submitted("job-b2c4d", "python x.py", 1, team="a"),
                _submitted("job-f6g7h", "python x.py", 5, team="a"),
            ],
            "job-f6g7h",
        ),
    ],
)
def test_kuberays_submission_is_found_on_the_dashboard_by_its_rules(
    case: str, spec: dict[str, Any], jobs: list[SubmittedJob], expected: str
) -> None:
    job = _job("HTTPMode", entrypoint=spec.get("entrypoint", "python x.py"), metadata={"team": "a"})
    if "jobId" in spec:
        job = job.model_copy(update={"spec": job.spec.model_copy(update={"job_id": spec["jobId"]})})
    assert kuberay_submission(job, jobs) == expected, case
