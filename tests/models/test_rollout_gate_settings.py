"""The gate settings of raypilot.io/rollout: blue-green gates, the measured providers' fields, per-step
deadlines; a bad value names its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.rollout import ANNOTATION_ROLLOUT, OnGateError, rollout_settings

EXAMPLES = Path(__file__).resolve().parents[1].parent / "examples"
PROBE = "analyses: [{name: probe, http: {}}]"


def test_the_blue_green_example_is_valid() -> None:
    settings = rollout_settings(
        {ANNOTATION_ROLLOUT: (EXAMPLES / "rollout" / "blue-green-gates.yaml").read_text()}
    )
    assert settings is not None
    assert (settings.pre_promotion_analysis, settings.auto_promotion_enabled) == ("probe", False)
    assert settings.post_promotion_analysis == "error-ratio"
    prometheus = settings.analyses[1].prometheus
    assert prometheus is not None
    assert prometheus.on_error == OnGateError.INCONCLUSIVE


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            f"{PROBE}\nprePromotionAnalysis: nope",
            'prePromotionAnalysis: no analysis named "nope" in analyses',
        ),
        (
            f"{PROBE}\npostPromotionAnalysis: nope",
            'postPromotionAnalysis: no analysis named "nope" in analyses',
        ),
        (
            "analyses: [{name: p, prometheus: {address: prom:9090, query: up, successCondition: '< 1'}}]",
            "analyses[0].prometheus.address",
        ),
        (
            "analyses: [{name: p, prometheus: {address: 'http://p', query: up, successCondition: '< 1', "
            "onError: Skip}}]",
            "analyses[0].prometheus.onError",
        ),
        ("analyses: [{name: p, http: {timeoutSeconds: 0}}]", "analyses[0].http.timeoutSeconds"),
        ("analyses: [{name: p, http: {intervalSeconds: 60}}]", "analyses[0].http.intervalSeconds"),
        ("steps: [{traffic: 5, progressDeadlineSeconds: 0}]", "steps[0].progressDeadlineSeconds"),
    ],
)
def test_a_bad_gate_setting_names_its_field(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=r"^raypilot\.io/rollout: ") as raised:
        rollout_settings({ANNOTATION_ROLLOUT: text})
    assert problem in str(raised.value)
