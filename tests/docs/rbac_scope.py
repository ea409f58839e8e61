"""Which tests tests/docs/test_rbac.py runs, audited, in a process of its own: the activity tests on the real
stack (without real Ray). A run that holds test_rbac's audit leaves them to it rather than run them twice
(tests/conftest.py); its failure lists theirs."""

from __future__ import annotations

from typing import Final

import pytest

ACTIVITY_TESTS: Final = ("tests/activities", "tests/docs/test_rbac_exercises.py")
MARKERS: Final = "realkube and not ray"
# The fixture of test_rbac.py that runs them.
AUDIT_FIXTURE: Final = "activity_requests"


def audited_by_the_rbac_run(nodeid: str, realkube: bool, ray: bool) -> bool:
    """Whether the rbac audit's own run runs this test (its path and its markers)."""
    path = nodeid.split("::")[0]
    in_scope = any(path == prefix or path.startswith(prefix + "/") for prefix in ACTIVITY_TESTS)
    return in_scope and realkube and not ray


class LeftToTheAudit:
    """A plugin (tests/conftest.py registers it): once `-m` and `-k` have chosen, a run that still holds the
    audit deselects the tests the audit runs."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not any(AUDIT_FIXTURE in getattr(item, "fixturenames", ()) for item in items):
            return
        audited = {
            item
            for item in items
            if audited_by_the_rbac_run(
                item.nodeid, bool(item.get_closest_marker("realkube")), bool(item.get_closest_marker("ray"))
            )
        }
        if audited:
            config.hook.pytest_deselected(items=[item for item in items if item in audited])
            items[:] = [item for item in items if item not in audited]
