"""Leader election on a coordination.k8s.io/v1 Lease: of two controllers one leads; the other takes over only
once the leader stopped renewing, and a leader that was taken over knows it."""

from __future__ import annotations

import time

from kubernetes import client

from raypilot.controller.lease import LEASE_NAME, LeaderLease


def test_two_controllers_one_leader(api_client: client.ApiClient, namespace: str) -> None:
    first = LeaderLease(api_client, namespace, "first", lease_seconds=1)
    second = LeaderLease(api_client, namespace, "second", lease_seconds=1)
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    assert first.try_acquire_or_renew()  # renewing
    assert not second.try_acquire_or_renew()
    # The leader stops renewing: after the Lease's duration the other takes over, and the first cannot renew.
    deadline = time.monotonic() + 10
    while not second.try_acquire_or_renew():
        assert time.monotonic() < deadline, "the second controller never took the Lease over"
        time.sleep(0.2)
    assert not first.try_acquire_or_renew()
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease(LEASE_NAME, namespace)
    assert (lease.spec.holder_identity, lease.spec.lease_transitions) == ("second", 1)


def test_a_released_lease_is_taken_at_once(api_client: client.ApiClient, namespace: str) -> None:
    first = LeaderLease(api_client, namespace, "first", lease_seconds=60)
    second = LeaderLease(api_client, namespace, "second", lease_seconds=60)
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    first.release()
    assert second.try_acquire_or_renew()
