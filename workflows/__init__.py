"""Deterministic Temporal workflows. Decisions live in ``workflows.decisions`` as pure functions."""
