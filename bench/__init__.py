"""raypilot's performance suite: `python -m bench` (see bench/README.md)."""
