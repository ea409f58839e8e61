"""`serialize_ast_parsing`: ast.parse holds one lock, so two threads never convert an AST at once."""

from __future__ import annotations

import ast
import sys
import threading

import pytest

from raypilot.ast_parsing import serialize_ast_parsing


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_parsing_from_many_threads_at_once_never_fails() -> None:
    serialize_ast_parsing()
    serialize_ast_parsing()  # a second call wraps nothing again
    assert getattr(ast.parse, "_raypilot_serialized", False)
    body = "    return [y for y in range(x) if y % 3 == {}]"
    source = "\n".join(f"def f{i}(x):\n" + body.format(i % 3) for i in range(200))
    failures: list[BaseException] = []

    def parse_repeatedly() -> None:
        try:
            for _ in range(20):
                assert len(ast.parse(source).body) == 200
        except BaseException as error:  # any error fails the test below
            failures.append(error)

    threads = [threading.Thread(target=parse_repeatedly) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the guard is off where the AST constructor is fixed")
def test_compiling_ast_objects_on_many_threads_at_once_never_fails() -> None:
    serialize_ast_parsing()
    body = "    if x:\n        return [y for y in range({}) if y]\n    return None\n"
    tree = ast.parse("\n".join(f"def f{i}(x):\n" + body.format(i % 3) for i in range(200)))
    failures: list[BaseException] = []

    def compile_repeatedly() -> None:
        try:
            for _ in range(20):
                compile(tree, "<many>", "exec")
                ast.parse("x = [1, 2, 3]")
        except BaseException as error:  # any error fails the test below
            failures.append(error)

    threads = [threading.Thread(target=compile_repeatedly) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
