"""raypilot: Ray on Kubernetes driven by durable Temporal workflows."""

__version__ = "0.1.0"
