"""The blue-green gates' decisions (decisions/rayservice/upgrade/blue_green.py), by table."""

from __future__ import annotations

import pytest

from workflows.decisions.rayservice.upgrade.analysis import AnalysisResult
from workflows.decisions.rayservice.upgrade.blue_green import (
    PostPromotion,
    post_promotion_step,
    pre_promotion_step,
)


def result(verdict: str) -> AnalysisResult:
    return AnalysisResult("gate", verdict, "")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("analysis", "manual", "awaited", "promote", "step"),
    [
        (None, False, "", False, "switch"),  # KubeRay's blue-green
        (result("pass"), False, "", False, "switch"),
        (result("pending"), False, "", False, "hold"),
        (result("fail"), False, "", False, "fail"),
        (result("fail"), True, "new", True, "fail"),  # a failed gate wins over a promote
        (result("pending"), True, "", True, "hold"),  # promote does not skip a running gate
        (None, True, "", False, "await_promote"),  # pause once
        (None, True, "new", False, "hold"),  # then hold until promote
        (None, True, "new", True, "switch"),
        (result("pass"), True, "", False, "await_promote"),  # the gate first, then the person
        (None, True, "older", False, "await_promote"),  # another pending cluster pauses anew
    ],
)
def test_pre_promotion_step(
    analysis: AnalysisResult | None, manual: bool, awaited: str, promote: bool, step: str
) -> None:
    assert pre_promotion_step("new", analysis, manual, awaited, promote) == step


POST = PostPromotion(new_cluster="new", old_cluster="old")


@pytest.mark.parametrize(
    ("post", "active", "analysis", "step"),
    [
        (None, "new", result("pass"), "none"),
        (POST, "new", None, "none"),
        (POST, "old", result("fail"), "none"),  # switched back already
        (POST, "new", result("pending"), "hold"),
        (POST, "new", result("pass"), "release"),
        (POST, "new", result("fail"), "switch_back"),
    ],
)
def test_post_promotion_step(
    post: PostPromotion | None, active: str, analysis: AnalysisResult | None, step: str
) -> None:
    assert post_promotion_step(post, active, analysis) == step
