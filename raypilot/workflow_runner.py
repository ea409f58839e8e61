"""How the workers run workflow code: in the worker's own interpreter, without Temporal's sandbox, and how
many workflow tasks at once."""

from __future__ import annotations

from temporalio.worker import UnsandboxedWorkflowRunner

# The packages that hold workflow code. The worker imports them once, for all runs.
#
# Why no sandbox: Temporal's sandbox re-imports a workflow's modules for each run and stops a clock, random
# or environment read in them at run time. Re-importing raypilot's modules cost ~110 ms and ~0.6 MiB per run
# (a RayJob history of 43 events replayed in 154 ms, 41 ms without), so they were passed through it, and
# code passed through is not checked at run time either. What was left of the sandbox was its cost: each
# workflow task ran its glue in the sandbox (a code string compiled and run per activation and per payload
# converted). Without it a RayJob lifecycle costs the worker 65 ms of CPU instead of 89 ms (P5, measured
# back to back). What the sandbox checked is held by the replay tests of every workflow type's committed
# histories, which keep the full sandbox (raypilot/testing/replay.py), by the tests that ask their workers for
# it (raypilot/testing/worker.py), and by a static scan of these packages
# (tests/raypilot/test_workflow_code_determinism.py).
OWN_PACKAGES = ("workflows", "models", "wire")

# Workflow tasks run one at a time under the GIL: a worker that takes more than it can finish within the
# 10 s workflow task timeout times them out, and the server retries those with a growing backoff while the
# worker idles (P7 at 10,000 RayJobs with the SDK's default of 100). Twenty tasks of ~40 ms each are at most
# ~1 s of queueing inside the worker; the rest wait on the server, where no timeout runs. Several workers on
# the task queue share the load.
MAX_CONCURRENT_WORKFLOW_TASKS = 20


def workflow_runner() -> UnsandboxedWorkflowRunner:
    """The runner `worker.py` uses (and the bench's reference worker, on the same footing)."""
    return UnsandboxedWorkflowRunner()
