"""The counts the benches read from the real stack's audit log (bench/realkube_counts.py): a client's
requests in a namespace since a mark, each once, a proxied call under its subresource."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.realkube_counts import AuditMark, audited_since, without_probes, without_proxy

WORKER = "system:serviceaccount:raypilot:raypilot-worker"


def line(
    audit_id: str, verb: str, resource: str, *, user: str = WORKER, namespace: str = "ns", at: str = ""
) -> str:
    target = {"resource": resource.split("/")[0], "namespace": namespace}
    if "/" in resource:
        target["subresource"] = resource.split("/")[1]
    event = {
        "auditID": audit_id,
        "stage": "ResponseComplete",
        "verb": verb,
        "user": {"username": user},
        "objectRef": target,
        "requestReceivedTimestamp": at or "2026-12-06T10:00:10.000000Z",
    }
    return json.dumps(event) + "\n"


def test_requests_since_a_mark_in_one_namespace_each_counted_once(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    before = line("old", "list", "rayclusters", at="2026-12-06T10:00:00.000000Z")
    log.write_text(before)
    mark = AuditMark(len(before), 1796551205.0)  # 2026-12-06T10:00:05Z
    log.write_text(
        before
        + line("w1", "watch", "rayclusters")
        + line("w1", "watch", "rayclusters")  # its ResponseStarted and ResponseComplete stages
        + line("g1", "get", "services/proxy")
        + line("g2", "get", "services/proxy")
        + line("o1", "get", "rayclusters", user="someone-else")
        + line("n1", "get", "rayclusters", namespace="other")
        + line("late", "get", "rayclusters", at="2026-12-06T10:00:01.000000Z")  # received before the mark
        + '{"auditID": "partial", "verb"'  # a line still being written
    )
    counted = audited_since(log, WORKER, "ns", mark)
    assert counted == {"watch rayclusters": 1, "get services/proxy": 2}
    assert without_proxy(counted) == 1


def test_the_kubelets_probes_are_no_clients_requests() -> None:
    routes = {"GET /api/gcs_healthz": 4, "GET /api/jobs/": 10, "GET /api/local_raylet_healthz": 2}
    assert without_probes(Counter(routes)) == {"GET /api/jobs/": 10}


def test_cluster_wide_requests_and_an_end_of_the_count(tmp_path: Path) -> None:
    """An informer's list and watch of every namespace name none; `until` leaves out what came after."""
    log = tmp_path / "audit.log"
    log.write_text(
        line("w1", "watch", "rayjobs", namespace="")
        + line("u1", "update", "rayjobs/status")
        + line("n1", "get", "rayclusters", namespace="other")
        + line("late", "get", "rayjobs", at="2026-12-06T10:00:20.000000Z")
    )
    mark = AuditMark(0, 1796551205.0)  # 2026-12-06T10:00:05Z
    assert audited_since(log, WORKER, "ns", mark) == {"update rayjobs/status": 1, "get rayjobs": 1}
    counted = audited_since(log, WORKER, "ns", mark, cluster_wide=True, until=1796551215.0)
    assert counted == {"watch rayjobs": 1, "update rayjobs/status": 1}
