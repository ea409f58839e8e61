"""Exit statuses of `raypilot` (docs/contract.md §6)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # any other failure: Temporal or Kubernetes unreachable, workflow unknown or failed
EXIT_REJECTED = 2  # rejected input (a manifest, a KIND/NAMESPACE/NAME, a control that does not apply now)
