"""The activity tests' sandbox fixtures (one simulated sandbox per module), for the exercises here."""

from tests.activities.conftest import cluster, core_api, deps, namespace, recording

__all__ = ["cluster", "core_api", "deps", "namespace", "recording"]
