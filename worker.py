"""`python worker.py`: the raypilot worker with every workflow and activity (docs/contract.md §2).

The worker itself is `raypilot.worker`, so that the CLI (`raypilot worker`) reaches it without importing this
top-level script.
"""

from __future__ import annotations

from raypilot.worker import main

if __name__ == "__main__":
    raise SystemExit(main())
