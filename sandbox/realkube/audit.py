"""The real API server's audit log, as the count of a client's requests: every request at the Metadata
level (who, verb, resource, namespace; no bodies), but Leases and Events, which controllers write all the time
and no test counts. One JSON line per request stage; a request is counted once, by its audit ID.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

__all__ = ["AUDIT_POLICY", "audited_requests", "write_audit_policy"]

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
        {"level": "None", "resources": [{"group": "", "resources": ["events"]}, {"group": "events.k8s.io"}]},
        {"level": "Metadata"},
    ],
}


def write_audit_policy(directory: Path) -> Path:
    path = directory / "audit-policy.yaml"
    path.write_text(yaml.safe_dump(AUDIT_POLICY))
    return path


def audited_requests(log: Path, user: str, namespace: str | None = None) -> Counter[str]:
    """ "<verb> <resource>" -> how many requests `user` made (in `namespace`, or cluster-wide ones too when
    None): a watch counts when it starts; "list" and "watch" are the API server's verbs for a collection."""
    counted: Counter[str] = Counter()
    seen: set[str] = set()
    for line in log.read_text(errors="replace").splitlines() if log.exists() else ():
        event = json.loads(line)
        if event.get("user", {}).get("username") != user or event.get("auditID") in seen:
            continue
        target = event.get("objectRef") or {}
        if namespace is not None and target.get("namespace") != namespace:
            continue
        seen.add(str(event.get("auditID")))
        counted[f"{event.get('verb')} {target.get('resource', '')}"] += 1
    return counted
