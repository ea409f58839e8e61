"""A local cluster for the demo and the tests: a Kubernetes REST API on 127.0.0.1 and local controllers.

Production code never imports this package; raypilot reaches it over HTTP like a real cluster.
"""
