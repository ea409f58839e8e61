"""Activities: every I/O act of raypilot (Kubernetes API, Gateway API, Ray Dashboard)."""
