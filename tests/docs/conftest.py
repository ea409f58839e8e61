"""The activity tests' fixtures (the real stack through a fault proxy per module), for the exercises here."""

from tests.activities.conftest import cluster, core_api, deps, namespace, recording

__all__ = ["cluster", "core_api", "deps", "namespace", "recording"]
