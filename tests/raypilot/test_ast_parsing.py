"""`serialize_ast_parsing`: ast.parse holds one lock, so two threads never convert an AST at once."""

from __future__ import annotations

import ast
import gc
import sys
import threading
from collections.abc import Callable

import pytest

from raypilot import ast_parsing
from raypilot.ast_parsing import serialize_ast_parsing


def errors_on_threads(work: Callable[[], None], threads: int = 8) -> list[BaseException]:
    """Runs `work` on `threads` threads at once; what any of them raised."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as error:  # any error fails the caller's assertion
            errors.append(error)

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return errors


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_parsing_from_many_threads_at_once_never_fails() -> None:
    serialize_ast_parsing()
    serialize_ast_parsing()  # a second call wraps nothing again
    assert getattr(ast.parse, "_raypilot_serialized", False)
    body = "    return [y for y in range(x) if y % 3 == {}]"
    source = "\n".join(f"def f{i}(x):\n" + body.format(i % 3) for i in range(200))

    def parse_repeatedly() -> None:
        for _ in range(20):
            assert len(ast.parse(source).body) == 200

    assert errors_on_threads(parse_repeatedly) == []


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_compiling_an_ast_object_or_to_an_ast_waits_for_the_lock_and_compiling_text_does_not() -> None:
    """The race itself rarely shows in a test (8 threads compiling at once did not fail unguarded), so this
    holds the guard's lock and watches who waits for it."""
    serialize_ast_parsing()
    tree = ast.parse("x = 1")
    done: list[str] = []
    with ast_parsing._LOCK:
        text = threading.Thread(target=lambda: (compile("y = 2", "<text>", "exec"), done.append("text")))
        objects = threading.Thread(target=lambda: (compile(tree, "<ast>", "exec"), done.append("ast")))
        to_ast = threading.Thread(
            target=lambda: (compile("z = 3", "<to-ast>", "exec", ast.PyCF_ONLY_AST), done.append("to-ast"))
        )
        text.start()
        objects.start()
        to_ast.start()
        text.join(timeout=5)
        objects.join(timeout=0.5)
        to_ast.join(timeout=0.5)
        assert done == ["text"]  # an AST object, or source text to an AST, waits while the lock is held
    objects.join(timeout=5)
    to_ast.join(timeout=5)
    assert sorted(done) == ["ast", "text", "to-ast"]


class ParsesWhenCollected:
    """In a reference cycle, so only the cyclic collector frees it; its finalizer parses, as a finalizer that
    logs an exception with a traceback does (the 3.11 traceback module parses to place its carets)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        def at_depth(levels: int) -> ast.Module:
            return at_depth(levels - 1) if levels else ast.parse("a = [1, 2, 3]")

        at_depth(20)


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_a_finalizer_that_parses_during_a_parse_on_the_same_thread_fails_nothing() -> None:
    """The re-entrant lock lets the same thread in; the collector is paused instead (unguarded, 137 of 200
    parses failed this way)."""
    serialize_ast_parsing()
    source = "\n".join(f"def f{i}(x):\n    return [y for y in range(x) if y % 3 == 1]" for i in range(300))
    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        for _ in range(50):
            for _ in range(30):
                ParsesWhenCollected()
            assert len(ast.parse(source).body) == 300
    finally:
        gc.set_threshold(*threshold)
        gc.collect()
    assert gc.isenabled()


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_a_long_wait_for_the_lock_is_logged_with_the_waiting_thread(caplog: pytest.LogCaptureFixture) -> None:
    serialize_ast_parsing()
    release = threading.Event()

    def hold_the_lock() -> None:
        with ast_parsing._LOCK:
            release.wait(timeout=5)

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    parser = threading.Thread(target=lambda: ast.parse("x = 1"), name="parser")
    with caplog.at_level("WARNING", logger="raypilot.ast_parsing"):
        parser.start()
        parser.join(timeout=2 * ast_parsing.LONG_HOLD_S)
        assert parser.is_alive()  # waiting for the lock
        release.set()
        parser.join(timeout=5)
        holder.join(timeout=5)
    [record] = [r for r in caplog.records if r.name == "raypilot.ast_parsing"]
    assert record.getMessage().startswith("AST conversion on thread parser waited ")
