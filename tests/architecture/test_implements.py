"""`@implements(declared)`: an activity is registered under its declaration's name, and mypy holds the
implementation's argument and result types to the declared ones (a workflow that type-checks against the
declarations sends what the activity takes and gets what it returns)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from temporalio import activity

from wire import names, stubs
from wire.kubernetes import ObjectKey
from wire.stubs.common import implements

CHECKED = """
from wire import stubs
from wire.kubernetes import DeleteObject, ObjectKey
from wire.stubs.common import implements


class Activities:
    @implements(stubs.get_raycluster)
    def as_declared(self, key: ObjectKey) -> dict[str, object] | None:
        return None

    @implements(stubs.get_raycluster)
    def wrong_argument(self, key: str) -> None:
        return None

    @implements(stubs.delete_raycluster)
    async def wrong_result(self, request: DeleteObject) -> str:
        return ""


@implements(stubs.read_operator_config)
def without_argument() -> str:
    return ""
"""


def test_an_implementation_is_registered_under_its_stubs_name() -> None:
    class Activities:
        @implements(stubs.get_raycluster)
        def read_it(self, key: ObjectKey) -> None:
            return None

    @implements(stubs.read_operator_config)
    async def configuration() -> None:
        return None

    assert activity._Definition.must_from_callable(Activities().read_it).name == names.GET_RAYCLUSTER
    assert activity._Definition.must_from_callable(configuration).name == names.READ_OPERATOR_CONFIG


def test_mypy_refuses_an_implementation_whose_types_differ_from_its_stub(tmp_path: Path) -> None:
    module = tmp_path / "implementations.py"
    module.write_text(CHECKED)
    # In a process of its own: mypy raises the interpreter's recursion limit, which would change how deep a
    # manifest the rest of this test process can parse (the S5 bad-input tests count on the default).
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent"]
    checked = subprocess.run(
        [*command, str(module)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out, status = checked.stdout, checked.returncode
    flagged = sorted(int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line)
    # mypy names the decorator's line: the one above each implementation whose types are not the stub's.
    lines = CHECKED.splitlines()
    wrong = [number for number, text in enumerate(lines) if "wrong_" in text or "without_argument" in text]
    assert status == 1, out
    assert flagged == wrong, out
