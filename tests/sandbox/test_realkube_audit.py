"""Counting a client's requests in kube-apiserver's audit log (sandbox/realkube/audit.py)."""

from __future__ import annotations

import json
from pathlib import Path

from sandbox.realkube.audit import audited_requests

WORKER = "system:serviceaccount:default:raypilot-worker"


def event(audit_id: str, user: str, verb: str, resource: str, namespace: str | None, stage: str) -> str:
    target = {"resource": resource, **({"namespace": namespace} if namespace else {})}
    return json.dumps(
        {"auditID": audit_id, "stage": stage, "verb": verb, "user": {"username": user}, "objectRef": target}
    )


def test_each_request_of_the_user_counts_once_by_verb_and_resource(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text(
        "\n".join(
            [
                # A watch is written when it starts and again when it ends: one request.
                event("a", WORKER, "watch", "rayclusters", "ns", "ResponseStarted"),
                event("a", WORKER, "watch", "rayclusters", "ns", "ResponseComplete"),
                event("b", WORKER, "list", "rayclusters", "ns", "ResponseComplete"),
                event("c", WORKER, "list", "jobs", "other", "ResponseComplete"),
                event("d", WORKER, "list", "namespaces", None, "ResponseComplete"),
                event(
                    "e",
                    "system:serviceaccount:default:kuberay-operator",
                    "list",
                    "rayclusters",
                    "ns",
                    "ResponseComplete",
                ),
            ]
        )
        + "\n"
    )
    assert audited_requests(log, WORKER) == {
        "watch rayclusters": 1,
        "list rayclusters": 1,
        "list jobs": 1,
        "list namespaces": 1,
    }
    assert audited_requests(log, WORKER, "ns") == {"watch rayclusters": 1, "list rayclusters": 1}
    assert audited_requests(tmp_path / "missing.log", WORKER) == {}
