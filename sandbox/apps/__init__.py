"""Ray Serve applications the sandbox deploys in tests and the demo (importable by Ray workers)."""
