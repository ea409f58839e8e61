"""The ClusterRoles in deploy/ against the Kubernetes API requests the activities really make.

The activity tests on the real stack (tests/activities, plus tests/docs/test_rbac_exercises.py for the paths
they do not reach) run once in a subprocess with tests/docs/rbac_audit.py logging every API request made
inside an activity. (They run as the worker's ServiceAccount, so the real API server refuses what deploy/'s
role lacks; this test also names the activity, and finds what the role grants and nobody uses.)
Each request becomes the (API group, resource, verb) an API server authorizes it as, and the comparison goes
both ways: a request the role does not allow fails, and so does a permission in the role that no request used.
Proxy requests (the Ray dashboard and the Serve health check through the API server, RAYPILOT_DASHBOARD_ACCESS
=proxy) belong to deploy/clusterrole-dashboard-proxy.yaml; everything else to the worker's
deploy/base/clusterrole.yaml.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from activities.registry import ActivityDependencies, build_activities
from tests.docs.rbac_scope import ACTIVITY_TESTS, MARKERS
from tests.kubes import SIMULATED_RAY_STACK_ENV, RealKube

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
# Activities that never call the Kubernetes API (the operator settings; Temporal's own API: visibility, the
# admission workflow of a shared cluster, the observers' signal-with-start; a Prometheus query goes to
# Prometheus itself).
NO_API_ACTIVITIES = {
    "raypilot.read_operator_config",
    "analysis.query_prometheus",
    "temporal.closed_runs",
    "temporal.wait_runs_closed",
    "temporal.enqueue_for_admission",
    "observer.watch_job",
    "k8s_observer.watch_object",
    "temporal.latest_earlier_run",
    "temporal.read_run_start",
    "temporal.list_cronjob_runs",
    "temporal.request_rayjob_deletion",
}

pytestmark = pytest.mark.timeout(900)


class Permission(NamedTuple):
    group: str
    resource: str  # plural, or plural/subresource
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


_VERB_OF_METHOD = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}


def permission_of(method: str, path: str, *, watch: bool) -> Permission:
    """How kube-apiserver's request info names a resource request for RBAC: GET/POST/PUT/PATCH/DELETE are
    get/create/update/patch/delete on one object or a subresource (the proxy too); on a collection GET is
    list (watch with ?watch=true) and DELETE deletecollection."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        raise ValueError(f"not a resource path: {path}")
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    method = method.upper()
    if method == "DELETE":
        verb = "delete" if named else "deletecollection"
    elif method == "GET" and not named:
        verb = "watch" if watch else "list"
    else:
        verb = _VERB_OF_METHOD[method]
    return Permission(group, resource, verb)


@pytest.mark.parametrize(
    ("method", "path", "watch", "expected"),
    [
        ("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters/rc", False, ("ray.io", "rayclusters", "get")),
        ("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters", False, ("ray.io", "rayclusters", "list")),
        ("GET", "/apis/ray.io/v1/namespaces/ns/rayclusters", True, ("ray.io", "rayclusters", "watch")),
        ("POST", "/apis/batch/v1/namespaces/ns/jobs", False, ("batch", "jobs", "create")),
        ("PUT", "/api/v1/namespaces/ns/services/s", False, ("", "services", "update")),
        ("PATCH", "/api/v1/namespaces/ns/pods/p", False, ("", "pods", "patch")),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", False, ("", "pods", "delete")),
        ("DELETE", "/api/v1/namespaces/ns/pods", False, ("", "pods", "deletecollection")),
        (
            "POST",
            "/api/v1/namespaces/ns/services/rc-head-svc:dashboard/proxy/api/jobs/",
            False,
            ("", "services/proxy", "create"),
        ),
        ("GET", "/api/v1/namespaces/ns/pods/h:8000/proxy/-/healthz", False, ("", "pods/proxy", "get")),
    ],
)
def test_requests_are_named_as_the_api_server_authorizes_them(
    method: str, path: str, watch: bool, expected: tuple[str, str, str]
) -> None:
    assert permission_of(method, path, watch=watch) == Permission(*expected)


def role_permissions(path: Path) -> set[Permission]:
    """Every (group, resource, verb) a ClusterRole grants; wildcards and resourceNames are refused (the role
    must list exactly what is used)."""
    role = yaml.safe_load(path.read_text())
    assert role["kind"] == "ClusterRole"
    granted: set[Permission] = set()
    for rule in role["rules"]:
        assert "resourceNames" not in rule, rule
        assert "nonResourceURLs" not in rule, rule
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"{path.name}: a wildcard in {field}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    granted.add(Permission(group, resource, verb))
    return granted


class ActivityRequests(NamedTuple):
    by_permission: dict[Permission, set[str]]  # which activities used each permission
    activities: set[str]


@pytest.fixture(scope="module")
def activity_requests(
    tmp_path_factory: pytest.TempPathFactory, real_kube_of_simulated_ray: RealKube
) -> ActivityRequests:
    directory = tmp_path_factory.mktemp("rbac")
    log = directory / "requests.jsonl"
    env = {**os.environ, "RAYPILOT_RBAC_AUDIT_LOG": str(log)}
    # Only the tests on the real stack make API requests: on this process's stack, which the subprocess
    # reaches instead of starting one of its own (this process waits for it meanwhile).
    env[SIMULATED_RAY_STACK_ENV] = str(real_kube_of_simulated_ray.describe(directory / "stack.json"))
    # Every failure is reported, not the first only: this run stands for theirs (tests/docs/rbac_scope.py).
    command = [sys.executable, "-m", "pytest", *ACTIVITY_TESTS, "-q", "-m", MARKERS]
    command += ["-p", "tests.docs.rbac_audit"]
    result = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=840, check=False
    )
    failed = [line for line in result.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    output = "\n".join(failed) + "\n" + result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"the activity tests failed:\n{output}"
    by_permission: dict[Permission, set[str]] = defaultdict(set)
    activities: set[str] = set()
    for line in log.read_text().splitlines():
        record: dict[str, Any] = json.loads(line)
        permission = permission_of(record["method"], record["path"], watch=record["watch"])
        by_permission[permission].add(record["activity"])
        activities.add(record["activity"])
    return ActivityRequests(dict(by_permission), activities)


def is_proxy(permission: Permission) -> bool:
    return permission.resource.endswith("/proxy")


def describe(permissions: set[Permission], requests: ActivityRequests | None = None) -> str:
    lines = []
    for permission in sorted(permissions):
        used_by = sorted(requests.by_permission.get(permission, ())) if requests else []
        lines.append(f"  {permission}" + (f"  (by {', '.join(used_by)})" if used_by else ""))
    return "\n".join(lines)


@pytest.mark.realkube
def test_every_activity_that_talks_to_kubernetes_was_exercised(activity_requests: ActivityRequests) -> None:
    registered = {
        getattr(fn, "__temporal_activity_definition").name
        for fn in build_activities(ActivityDependencies.from_env({}))
    }
    missing = registered - NO_API_ACTIVITIES - activity_requests.activities
    assert not missing, f"activities never run against the API server, their requests unknown: {missing}"


@pytest.mark.realkube
@pytest.mark.parametrize(
    ("role_file", "proxy"), [("base/clusterrole.yaml", False), ("clusterrole-dashboard-proxy.yaml", True)]
)
def test_role_allows_every_request_and_nothing_more(
    activity_requests: ActivityRequests, role_file: str, proxy: bool
) -> None:
    used = {p for p in activity_requests.by_permission if is_proxy(p) == proxy}
    granted = role_permissions(DEPLOY / role_file)
    denied = used - granted
    unused = granted - used
    report = (
        f"{role_file} lacks permissions the activities use:\n{describe(denied, activity_requests)}\n"
        f"{role_file} grants permissions no activity uses:\n{describe(unused)}"
    )
    assert not denied, report
    assert not unused, report


def readme_table_permissions(text: str) -> set[Permission]:
    """The permissions of the table under "## Permissions" in deploy/README.md (group `core` is "")."""
    section = text.split("## Permissions", 1)[1]
    listed: set[Permission] = set()
    for line in section.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("API group", "") or set(cells[0]) <= {"-"}:
            continue
        group = "" if cells[0] == "core" else cells[0]
        for resource in cells[1].split(", "):
            for verb in cells[2].split(", "):
                listed.add(Permission(group, resource, verb))
    return listed


def test_the_deploy_readme_table_is_the_worker_role() -> None:
    table = readme_table_permissions((DEPLOY / "README.md").read_text())
    assert table == role_permissions(DEPLOY / "base" / "clusterrole.yaml")
