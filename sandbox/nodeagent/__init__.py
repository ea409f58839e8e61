"""raypilot's node agent: a kubelet's part for a real control plane whose pods run as local processes, each
pod in a network namespace of its own (agent.py, pods.py, network.py)."""
