"""Leader election with a coordination.k8s.io/v1 Lease, so that two controller replicas never both act.

The holder renews the Lease every `renew_seconds`; another replica takes it over only once it has not been
renewed for `lease_seconds`. Optimistic concurrency (resourceVersion) makes each take-over and renewal an
atomic compare-and-swap: of two replicas racing for an expired Lease, one write wins, the other gets 409.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

LEASE_NAME = "raypilot-controller"


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    renewed: datetime
    duration_seconds: int
    transitions: int = 0


def may_hold(record: LeaseRecord | None, me: str, now: datetime) -> bool:
    """Whether `me` may (re)write the Lease: nobody holds it, `me` does, or the holder stopped renewing."""
    if record is None or not record.holder or record.holder == me:
        return True
    return now >= record.renewed + timedelta(seconds=record.duration_seconds)


def _micro_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).replace("Z", "+00:00")
    return datetime.fromisoformat(text)


def _record(spec: dict[str, Any]) -> LeaseRecord | None:
    if not spec.get("holderIdentity"):
        return None
    renewed = spec.get("renewTime") or spec.get("acquireTime")
    return LeaseRecord(
        holder=str(spec["holderIdentity"]),
        renewed=_parse_time(renewed) if renewed else datetime.min.replace(tzinfo=UTC),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 15),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


class LeaderLease:
    def __init__(self, api_client: client.ApiClient, namespace: str, me: str, lease_seconds: int) -> None:
        self.api: Any = client.CoordinationV1Api(api_client)  # Any: plain JSON dicts, not the client's models
        self.namespace, self.me, self.lease_seconds = namespace, me, lease_seconds

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when `me` holds the Lease afterwards."""
        now = datetime.now(UTC)
        try:
            current = self.api.api_client.sanitize_for_serialization(
                self.api.read_namespaced_lease(LEASE_NAME, self.namespace)
            )
        except ApiException as error:
            if error.status != 404:
                raise
            return self._create(now)
        spec = current.get("spec") or {}
        record = _record(spec)
        if not may_hold(record, self.me, now):
            return False
        taking_over = record is None or record.holder != self.me
        new_spec = {
            **spec,
            "holderIdentity": self.me,
            "leaseDurationSeconds": self.lease_seconds,
            "renewTime": _micro_time(now),
        }
        if taking_over:
            new_spec["acquireTime"] = _micro_time(now)
            new_spec["leaseTransitions"] = (record.transitions + 1) if record else 0
        body = {**current, "spec": new_spec}
        try:
            self.api.replace_namespaced_lease(LEASE_NAME, self.namespace, body)
        except ApiException as error:
            if error.status == 409:  # another replica wrote first
                return False
            raise
        return True

    def _create(self, now: datetime) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE_NAME, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.me,
                "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": _micro_time(now),
                "renewTime": _micro_time(now),
                "leaseTransitions": 0,
            },
        }
        try:
            self.api.create_namespaced_lease(self.namespace, body)
        except ApiException as error:
            if error.status == 409:
                return False
            raise
        return True

    def release(self) -> None:
        """Give the Lease up on a clean exit, so another replica takes over at once."""
        try:
            current = self.api.api_client.sanitize_for_serialization(
                self.api.read_namespaced_lease(LEASE_NAME, self.namespace)
            )
            if (current.get("spec") or {}).get("holderIdentity") == self.me:
                current["spec"]["holderIdentity"] = ""
                self.api.replace_namespaced_lease(LEASE_NAME, self.namespace, current)
        except ApiException:
            pass
