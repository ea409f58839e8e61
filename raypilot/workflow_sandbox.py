"""How the workers run workflow code: Temporal's sandbox with raypilot's own packages passed through, and
how many workflow tasks at once."""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

# raypilot's own packages are imported once for the worker, not again in every workflow run's sandbox: a
# sandboxed re-import of the workflow modules cost ~110 ms and ~0.6 MiB per run (a RayJob history of 43
# events replayed in 154 ms, 41 ms passed through), paid again for every task of an evicted workflow. What
# the sandbox checked at run time in them (no clock, randomness or environment) is held by the replay tests
# of every workflow type's committed histories, which keep the full sandbox (raypilot/testing/replay.py),
# and by a static scan (tests/unit/test_workflow_code_determinism.py). The tests' workers keep the full
# sandbox too (raypilot/testing/worker.py).
OWN_PACKAGES = ("workflows", "models", "wire")

# Workflow tasks run one at a time under the GIL: a worker that takes more than it can finish within the
# 10 s workflow task timeout times them out, and the server retries those with a growing backoff while the
# worker idles (P7 at 10,000 RayJobs with the SDK's default of 100). Twenty tasks of ~40 ms each are at most
# ~1 s of queueing inside the worker; the rest wait on the server, where no timeout runs. Several workers on
# the task queue share the load.
MAX_CONCURRENT_WORKFLOW_TASKS = 20


def workflow_runner(*more_packages: str) -> SandboxedWorkflowRunner:
    """The sandbox with OWN_PACKAGES passed through, and `more_packages` (e.g. the bench's own workflows)."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*OWN_PACKAGES, *more_packages)
    )
