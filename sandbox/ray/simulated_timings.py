"""How long things take in the simulated dashboard.

The defaults are close to what one real Ray 2.60 head does on a 2-core machine (measured: job supervisor
start ~3 s, app build ~1.5 s, replica start ~1.5-2 s, replica stop ~2 s), scaled down so workflows stay
quick; `SimulationTimings.fast()` is for tests that only care about the order of states (it keeps `sleep N`
literal: tests pick small N, or set `sleep_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass

# A process of simulated Ray (sandbox/images/simulated_ray.py) takes `SimulationTimings.fast()` when this is
# "fast" in its environment.
TIMINGS_ENV = "RAYPILOT_SIMULATED_RAY"


@dataclass(frozen=True)
class SimulationTimings:
    tick_s: float = 0.1  # Serve controller loop period
    job_pending_s: float = 1.0  # PENDING before the entrypoint runs (supervisor actor start)
    command_s: float = 0.5  # run time of a command the entrypoint interpreter does not model
    sleep_scale: float = 1.0  # multiplies `sleep N` and `time.sleep(N)` in entrypoints
    job_stop_s: float = 0.2  # from a stop request to STOPPED
    serve_start_s: float = 1.0  # first PUT: starting the Serve controller and proxy (the PUT waits)
    app_build_s: float = 1.0  # importing an application (DEPLOYING with no deployments yet)
    replica_start_s: float = 1.0  # STARTING -> RUNNING
    replica_stop_s: float = 0.5  # STOPPING -> gone
    replica_update_s: float = 0.2  # UPDATING (reconfigure with a new user_config) -> RUNNING

    @classmethod
    def fast(cls) -> SimulationTimings:
        return cls(
            tick_s=0.02,
            job_pending_s=0.05,
            command_s=0.05,
            job_stop_s=0.02,
            serve_start_s=0.02,
            app_build_s=0.05,
            replica_start_s=0.05,
            replica_stop_s=0.05,
            replica_update_s=0.02,
        )
