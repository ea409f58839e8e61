"""The Nexus service `raypilot` (docs/contract.md §9): its handlers, which the worker registers."""
