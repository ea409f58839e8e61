"""The sandbox's Gateway API implementation: a weighted HTTP proxy per Gateway, driven by the HTTPRoutes that
name it, beside a real API server (sandbox/realkube/gateway.py runs it)."""
