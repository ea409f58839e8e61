"""P0: what the real stack costs while nothing happens on it (issue budget: its idle CPU and memory).

The stack of bench/realkube_stack.py (etcd, kube-apiserver, kube-controller-manager, the node agent with its
pods: KubeRay's operator and kube-proxy; raypilot installed, no RayJob or RayService), left alone for
`WINDOW_S` once it has settled: each component's CPU time in that window, from /proc (user + system, the
process and its descendants), and its resident memory at the end. There is no reference: the figure says what
a developer's machine pays to keep the stack up beside the tests or the demo.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bench.arithmetic import Figure
from bench.jobs_support import node_agent_pid
from bench.realkube_stack import shared_real_stack
from bench.suite import BenchContext
from sandbox.ray.processes import every_process_stat, stat_fields

WINDOW_S = 60.0
SMOKE_WINDOW_S = 3.0
SETTLE_S = 10.0  # KubeRay's operator and the controllers' first resyncs after the install
_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def process_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for pid, fields in every_process_stat():
        children.setdefault(int(fields[1]), []).append(pid)
    return children


def tree(pid: int, children: dict[int, list[int]]) -> list[int]:
    """`pid` and every process below it."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = stat_fields(pid)
        except OSError:
            continue  # ended since the tree was read
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            continue
    return total * _PAGE / 2**20


async def run(context: BenchContext) -> list[Figure]:
    real = await shared_real_stack(context)
    components = {name: process.pid for name, process in real.plane.processes.items()}
    agent = node_agent_pid(real)
    if agent is not None:
        components["node agent and its pods"] = agent
    window = SMOKE_WINDOW_S if context.smoke else WINDOW_S
    await asyncio.sleep(0 if context.smoke else SETTLE_S)
    children = process_children()
    trees = {name: tree(pid, children) for name, pid in components.items()}
    before = {name: cpu_seconds(pids) for name, pids in trees.items()}
    await asyncio.sleep(window)  # the measured idle window itself
    used = {name: (cpu_seconds(pids) - before[name]) / window for name, pids in trees.items()}
    memory = {name: rss_mib(pids) for name, pids in trees.items()}
    shown = ", ".join(f"{name} {used[name] * 100:.1f} % / {memory[name]:.0f} MiB" for name in components)
    return [
        Figure(
            "P0",
            f"the real stack idle, {window:.0f} s: CPU (of one core) and RSS",
            f"{sum(used.values()) * 100:.1f} % of a core, {sum(memory.values()):.0f} MiB",
            "-",
            "-",
            None,
            [f"per component: {shown}"],
        )
    ]
