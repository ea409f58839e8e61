"""How the workers run workflow code: Temporal's sandbox, with raypilot's own packages passed through."""

from __future__ import annotations

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

# raypilot's own packages are imported once for the worker, not again in every workflow run's sandbox: a
# sandboxed re-import of the workflow modules cost ~110 ms and ~0.6 MiB per run (a RayJob history of 43
# events replayed in 154 ms, 41 ms passed through), paid again for every task of an evicted workflow. What
# the sandbox checked at run time in them (no clock, randomness or environment) is held by the replay tests
# of every workflow type's committed histories, which keep the full sandbox (raypilot/testing/replay.py),
# and by a static scan (tests/unit/test_workflow_code_determinism.py). The tests' workers run workflows as
# this worker does (raypilot/testing/worker.py).
OWN_PACKAGES = ("workflows", "models", "wire")


def workflow_runner(*more_packages: str) -> SandboxedWorkflowRunner:
    """The sandbox with OWN_PACKAGES passed through, and `more_packages` (e.g. the bench's own workflows)."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*OWN_PACKAGES, *more_packages)
    )
