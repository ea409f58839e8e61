"""P5's row says what its CPU per lifecycle allows: bare Temporal's worker + server over raypilot's, and the
worker + server CPU at which the target is reachable; nothing when the dev server's CPU was not found."""

from __future__ import annotations

from bench.p5_throughput import CpuPerLifecycle, temporal_bound


def test_the_bound_is_bare_cpu_over_ours_and_names_the_cpu_the_target_needs() -> None:
    ours = CpuPerLifecycle(worker_ms=56.0, stack_ms=47.0, server_ms=53.0, database_ms=None)
    bare = CpuPerLifecycle(worker_ms=16.0, stack_ms=None, server_ms=16.0, database_ms=None)
    assert temporal_bound(ours, bare) == "; CPU bound 0.29 (worker + server 46 ms for 0.7)"


def test_no_bound_without_the_server_cpu() -> None:
    ours = CpuPerLifecycle(worker_ms=56.0, stack_ms=47.0, server_ms=None, database_ms=None)
    bare = CpuPerLifecycle(worker_ms=16.0, stack_ms=None, server_ms=16.0, database_ms=None)
    assert temporal_bound(ours, bare) == ""
