"""One `ast.parse` at a time in the process: a guard against a CPython 3.11 bug.

CPython 3.11 keeps the recursion depth of its AST constructor in interpreter-wide state, so two threads
converting an AST at the same moment (`ast.parse`, which the 3.11 traceback module also calls to place its
carets) can fail one of them with `SystemError: AST constructor recursion depth mismatch` (CPython
gh-106905). A worker formats tracebacks and answers queries on several threads at once; seen here as a failed
workflow query and as a crashed pytest worker. Serializing `ast.parse` costs nothing measurable: it runs on
error paths and at import."""

from __future__ import annotations

import ast
import builtins
import contextlib
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["serialize_ast_parsing"]

_LOCK = threading.RLock()
_log = logging.getLogger(__name__)


@contextlib.contextmanager
def _converting() -> Iterator[None]:
    """Holds the lock with the cyclic garbage collector paused. The lock is re-entrant (ast.parse calls
    compile), so it cannot stop the same thread from starting a second conversion inside the first, and the
    collector can do exactly that: a finalizer it runs mid-conversion (an asyncio future's, logging its
    exception with a traceback, whose carets call ast.parse) resets the depth under the outer conversion.
    Reproduced here: 137 of 200 parses failed with such a finalizer and a low collection threshold."""
    asked = time.monotonic()
    with _LOCK:
        got = time.monotonic()
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()
    _report_if_long(got - asked, time.monotonic() - got)


# A conversion that held the lock (or waited for it) longer than this is logged: a workflow activation that
# stalls for seconds on a loaded machine can then be told apart from one that waited here.
LONG_HOLD_S = 0.1


def _report_if_long(waited_s: float, held_s: float) -> None:
    if waited_s > LONG_HOLD_S or held_s > LONG_HOLD_S:
        _log.warning(
            "AST conversion on thread %s waited %.3f s for the guard's lock and held it %.3f s",
            threading.current_thread().name,
            waited_s,
            held_s,
        )


def serialize_ast_parsing() -> None:
    """Makes `ast.parse`, and `compile` of an AST object or to an AST, take a process-wide lock with the
    cyclic collector paused (once; a no-op from Python 3.13, whose AST constructor keeps that depth per
    call)."""
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_raypilot_serialized", False):
        return
    unguarded = ast.parse
    unguarded_compile: Callable[..., Any] = builtins.compile

    def parse(*args: Any, **kwargs: Any) -> Any:
        with _converting():
            return unguarded(*args, **kwargs)

    def compile_(source: Any, *args: Any, **kwargs: Any) -> Any:
        # compile() of an AST object converts it with the same interpreter-wide depth (pytest's assertion
        # rewriting does, on whatever thread imports a test helper: seen failing a sandboxed workflow's
        # import in a full run), and so does compile() with PyCF_ONLY_AST, which is ast.parse without its
        # name (a module copy of `ast` inside the workflow sandbox calls it so: seen failing the same import
        # after the AST-object guard). Compiling source text to code builds no Python AST objects.
        flags = args[2] if len(args) > 2 else kwargs.get("flags", 0)
        if isinstance(source, ast.AST) or flags & ast.PyCF_ONLY_AST:
            with _converting():
                return unguarded_compile(source, *args, **kwargs)
        return unguarded_compile(source, *args, **kwargs)

    parse._raypilot_serialized = True  # type: ignore[attr-defined]
    ast.parse = parse
    builtins.compile = compile_
