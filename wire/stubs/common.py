"""What every stub says when run: a stub is never run (see `wire.stubs`)."""

from __future__ import annotations

from typing import Final

STUB_MESSAGE: Final = "a stub: the worker runs the implementation registered under this name"
