"""The cluster observer of Ray jobs (see wire.observer)."""
