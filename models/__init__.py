"""KubeRay ray.io/v1 specs and statuses as pydantic models, their validation, hashing and naming.

Pure code only: nothing here performs I/O or imports other raypilot packages.
"""
