"""One `ast.parse` at a time in the process: a guard against a CPython 3.11 bug.

CPython 3.11 keeps the recursion depth of its AST constructor in interpreter-wide state, so two threads
converting an AST at the same moment (`ast.parse`, which the 3.11 traceback module also calls to place its
carets) can fail one of them with `SystemError: AST constructor recursion depth mismatch` (CPython
gh-106905). A worker formats tracebacks and answers queries on several threads at once; seen here as a failed
workflow query and as a crashed pytest worker. Serializing `ast.parse` costs nothing measurable: it runs on
error paths and at import."""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any

__all__ = ["serialize_ast_parsing"]

_LOCK = threading.RLock()


def serialize_ast_parsing() -> None:
    """Makes `ast.parse` take a process-wide lock (once; a no-op from Python 3.13, whose AST constructor keeps
    that depth per call)."""
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_raypilot_serialized", False):
        return
    unguarded = ast.parse

    def parse(*args: Any, **kwargs: Any) -> Any:
        with _LOCK:
            return unguarded(*args, **kwargs)

    parse._raypilot_serialized = True  # type: ignore[attr-defined]
    ast.parse = parse
