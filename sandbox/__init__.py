"""A local cluster for the demo and the tests: the real Kubernetes control plane and KubeRay's operator run as
local processes (sandbox/realkube), a node agent runs their pods (sandbox/nodeagent), a Gateway controller
serves the Gateway API (sandbox/gateway), and Ray is real or simulated (sandbox/ray, sandbox/images).

Production code never imports this package; raypilot reaches it over HTTPS like any cluster.
"""
