"""The node agent's pure parts: the pod phase and status a kubelet would report, restarts and back-off, probe
thresholds, and the names pods resolve (sandbox/nodeagent)."""

from __future__ import annotations

import pytest

from sandbox.nodeagent.agent import cluster_ip, service_addresses
from sandbox.nodeagent.network import hosts_file, service_names
from sandbox.nodeagent.podstatus import (
    ContainerRun,
    PodReport,
    RunState,
    Termination,
    pod_phase,
    pod_status,
    restart_delay,
    should_restart,
)
from sandbox.nodeagent.probes import ProbeSpec, ProbeTracker, keep_probing, resolve_port

T0, T1 = "2026-11-28T10:00:00Z", "2026-11-28T10:00:05Z"


def waiting(name: str = "c", restarts: int = 0) -> ContainerRun:
    return ContainerRun(name, "img", restart_count=restarts)


def running(name: str = "c", ready: bool = True) -> ContainerRun:
    return ContainerRun(name, "img", state=RunState.RUNNING, started_at=T0, ready=ready, started=True)


def ended(code: int, name: str = "c") -> ContainerRun:
    end = Termination(code, "Completed" if code == 0 else "Error", T0, T1)
    return ContainerRun(name, "img", state=RunState.TERMINATED, terminated=end)


@pytest.mark.parametrize(
    ("policy", "init", "main", "phase"),
    [
        ("Always", [], [waiting()], "Pending"),
        ("Always", [running("i")], [waiting()], "Pending"),  # init still running
        ("Always", [ended(0, "i")], [running()], "Running"),
        ("Never", [ended(1, "i")], [waiting()], "Failed"),  # a failed init container, no restarts
        ("OnFailure", [ended(1, "i")], [waiting()], "Pending"),  # it will be restarted
        ("Never", [], [ended(0)], "Succeeded"),
        ("Never", [], [ended(0, "a"), ended(2, "b")], "Failed"),
        ("Never", [], [ended(0, "a"), running("b")], "Running"),
        ("OnFailure", [], [ended(0)], "Succeeded"),
        ("OnFailure", [], [ended(1)], "Running"),  # restarted after its back-off
        ("Always", [], [ended(0)], "Running"),
        ("Always", [], [waiting(restarts=2)], "Running"),  # back-off between restarts
    ],
)
def test_pod_phase(policy: str, init: list[ContainerRun], main: list[ContainerRun], phase: str) -> None:
    assert pod_phase(policy, init, main) == phase


@pytest.mark.parametrize(
    ("policy", "code", "restart"),
    [
        ("Always", 0, True),
        ("Always", 1, True),
        ("OnFailure", 0, False),
        ("OnFailure", 137, True),
        ("Never", 1, False),
    ],
)
def test_should_restart(policy: str, code: int, restart: bool) -> None:
    assert should_restart(policy, code) is restart


@pytest.mark.parametrize(("restarts", "delay"), [(0, 10.0), (1, 20.0), (3, 80.0), (5, 300.0), (20, 300.0)])
def test_restart_delay_doubles_up_to_five_minutes(restarts: int, delay: float) -> None:
    assert restart_delay(restarts) == delay


def test_pod_status_reports_ready_only_when_every_container_is_and_keeps_transition_times() -> None:
    report = PodReport("10.200.0.2", "10.200.0.1", T0)
    status = pod_status("Always", [ended(0, "init")], [running("a"), running("b", ready=False)], report, T0)
    conditions = {c["type"]: c for c in status["conditions"]}
    assert status["phase"] == "Running"
    assert status["podIP"] == "10.200.0.2"
    assert status["podIPs"] == [{"ip": "10.200.0.2"}]
    assert conditions["Initialized"]["status"] == "True"
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "ContainersNotReady"
    assert [s["ready"] for s in status["containerStatuses"]] == [True, False]
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"

    later = pod_status("Always", [ended(0, "init")], [running("a"), running("b")], report, T1)
    conditions = {c["type"]: c for c in later["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["Ready"]["lastTransitionTime"] == T1
    assert conditions["Initialized"]["lastTransitionTime"] == T0  # unchanged since the first report


def test_a_restarted_container_shows_its_last_termination() -> None:
    last = Termination(1, "Error", T0, T1)
    run = ContainerRun("c", "img", reason="CrashLoopBackOff", restart_count=1, last_terminated=last)
    status = run.as_status()
    assert status["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["restartCount"] == 1
    assert status["ready"] is False


@pytest.mark.parametrize(
    ("passing", "results", "verdicts"),
    [
        (False, [False, True], [False, True]),  # success threshold 1
        (
            True,
            [False, False, True, False, False, False],
            [True, True, True, True, True, False],
        ),  # 3 in a row
    ],
)
def test_probe_tracker_changes_only_at_its_thresholds(
    passing: bool, results: list[bool], verdicts: list[bool]
) -> None:
    tracker = ProbeTracker(ProbeSpec({"tcpSocket": {"port": 1}}, failure_threshold=3), passing=passing)
    seen = []
    for result in results:
        tracker.record(result)
        seen.append(tracker.passing)
    assert seen == verdicts


@pytest.mark.parametrize(
    ("passing", "stop_on", "results", "changes", "checks"),
    [
        # readiness: every change is handed on, probing goes on (until the results run out here)
        (False, None, [False, True, True, False, False, False, True], [True, False, True], 7),
        # liveness: the first failure verdict stops it; later results are never checked
        (True, False, [True, False, False, False, True], [False], 4),
    ],
    ids=["readiness", "liveness"],
)
async def test_keep_probing_hands_on_each_change_of_the_verdict_until_told_to_stop(
    passing: bool, stop_on: bool | None, results: list[bool], changes: list[bool], checks: int
) -> None:
    probe = ProbeSpec({"tcpSocket": {"port": 1}}, period_s=0.0, failure_threshold=3)
    remaining = list(results)
    checked: list[ProbeSpec] = []
    seen: list[bool] = []

    async def check(spec: ProbeSpec) -> bool:
        checked.append(spec)
        if not remaining:
            raise LookupError("no results left")
        return remaining.pop(0)

    async def changed(verdict: bool) -> bool:
        seen.append(verdict)
        return verdict == stop_on

    if stop_on is None:
        with pytest.raises(LookupError):
            await keep_probing(probe, passing, check, changed)
    else:
        await keep_probing(probe, passing, check, changed)
    assert seen == changes
    assert checked[:checks] == [probe] * checks
    assert len(checked) == (checks + 1 if stop_on is None else checks)


def test_probe_defaults_and_named_ports() -> None:
    container = {
        "ports": [{"name": "dashboard", "containerPort": 8265}],
        "readinessProbe": {"exec": {"command": ["true"]}},
    }
    spec = ProbeSpec.of(container, "readinessProbe")
    assert spec == ProbeSpec({"exec": {"command": ["true"]}})
    assert (spec.period_s, spec.timeout_s, spec.failure_threshold) == (10.0, 1.0, 3)
    assert ProbeSpec.of(container, "livenessProbe") is None
    assert resolve_port("dashboard", container) == 8265
    assert resolve_port(52365, container) == 52365
    assert resolve_port("metrics", container) is None


def test_service_names_and_hosts_file() -> None:
    assert service_names("head", "ns", "ns")[-1] == "head"
    assert "head" not in service_names("head", "ns", "other")
    text = hosts_file("10.200.0.5", ["pod-a"], "ns", {("ns", "head"): "10.200.0.3"})
    assert "10.200.0.5\tpod-a" in text
    assert "10.200.0.3\thead.ns.svc.cluster.local head.ns.svc head.ns head" in text


def test_service_addresses_are_cluster_ips_and_headless_ones_prefer_ready_endpoints() -> None:
    def slice_of(service: str, *endpoints: tuple[str, bool]) -> dict[str, object]:
        return {
            "addressType": "IPv4",
            "metadata": {"namespace": "ns", "labels": {"kubernetes.io/service-name": service}},
            "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}} for ip, ready in endpoints],
        }

    slices = {
        "1": slice_of("web", ("10.200.0.9", False), ("10.200.0.7", True)),
        "2": slice_of("head", ("10.200.0.4", False)),  # publishNotReadyAddresses: still resolvable
        "3": slice_of("empty"),
    }
    assert service_addresses({}, slices) == {("ns", "web"): "10.200.0.7", ("ns", "head"): "10.200.0.4"}
    # With kube-proxy on the node a Service with a clusterIP resolves to it, endpoints or not.
    cluster_ips = {("ns", "web"): "10.96.0.20", ("ns", "empty"): "10.96.0.21"}
    assert service_addresses(cluster_ips, slices) == {
        ("ns", "web"): "10.96.0.20",
        ("ns", "empty"): "10.96.0.21",
        ("ns", "head"): "10.200.0.4",
    }
    assert cluster_ip({"spec": {"clusterIP": "10.96.0.20"}}) == "10.96.0.20"
    assert cluster_ip({"spec": {"clusterIP": "None"}}) is None  # headless
    assert cluster_ip({"spec": {}}) is None
