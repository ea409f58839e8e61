"""`raypilot.io/rollout`: progressive delivery settings of a RayService beyond KubeRay (issue #18).

The annotation holds YAML or JSON, so the manifest stays valid for KubeRay. It is read and checked like the
spec: a bad value rejects the manifest with a message naming the field (`rollout_settings` raises
ValueError), and nothing is created. Without the annotation a RayService upgrades exactly as in KubeRay.

    steps:                       # walked in order during a NewClusterWithIncrementalUpgrade
      - traffic: 1               # percent of the traffic on the new cluster
      - pause: 5m                # a Go duration, or "indefinite" (waits for resume or promote)
      - traffic: 25
        pause: indefinite        # a step may move traffic, then pause
      - analysis: serve-healthy  # names one of `analyses`
    analyses:
      - name: serve-healthy
        serveStatus: {}
    progressDeadlineSeconds: 600 # the new cluster must be ready this long after the upgrade began
    onProgressDeadline: Abort    # or Degraded: say so and keep waiting
    onUnhealthy: Abort           # or Wait
    revisionHistoryLimit: 10
    headerCanary: {name: x-canary, value: "true"}
    abortScaleDownDelaySeconds: 600  # an aborted new cluster is kept this long for debugging

A step `{mirror: P}` copies P percent of the requests to the new cluster (responses discarded) through the
HTTPRoute's RequestMirror filter, until a step with `mirror: 0` or with `traffic`; incremental upgrades only.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import Field, field_validator, model_validator

from models.base import SpecModel
from models.formats import parse_go_duration_seconds
from models.yaml_annotation import annotation_model

__all__ = [
    "ANNOTATION_ROLLOUT",
    "INDEFINITE",
    "Analysis",
    "HeaderCanary",
    "HttpProbe",
    "OnGateError",
    "OnProgressDeadline",
    "OnUnhealthy",
    "PrometheusQuery",
    "RolloutSettings",
    "RolloutStep",
    "ServeStatusCheck",
    "pause_seconds",
    "rollout_error",
    "rollout_settings",
    "rollout_strategy_error",
]

ANNOTATION_ROLLOUT: Final = "raypilot.io/rollout"
INDEFINITE: Final = "indefinite"
# An annotation is at most 256 KiB in Kubernetes (all of them together); a plan is far smaller.
MAX_STEPS: Final = 100
# An aborted cluster kept for debugging holds its resources: at most 30 days.
MAX_ABORT_SCALE_DOWN_DELAY_SECONDS: Final = 30 * 24 * 3600

Percent = Annotated[int, Field(ge=0, le=100, strict=True)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]


class OnProgressDeadline(StrEnum):
    ABORT = "Abort"  # roll back to the active cluster, as the `abort` control does
    DEGRADED = "Degraded"  # mark the RayService degraded (condition and Event) and keep waiting


class OnUnhealthy(StrEnum):
    ABORT = "Abort"
    WAIT = "Wait"


def pause_seconds(pause: str) -> float | None:
    """A step's pause in seconds; None for an indefinite pause. ValueError for a bad duration."""
    if pause == INDEFINITE:
        return None
    seconds = parse_go_duration_seconds(pause)
    if seconds <= 0:
        example = '(e.g. "30s", "5m")'
        raise ValueError(f'must be a positive Go duration {example} or "{INDEFINITE}", got "{pause}"')
    return seconds


class RolloutStep(SpecModel):
    traffic: Percent | None = None
    pause: str | None = None
    analysis: str | None = None
    # Percent of the requests copied to the new cluster (responses discarded) from this step on, until a step
    # with `mirror: 0` or with traffic; the copies go through the HTTPRoute's RequestMirror filter.
    mirror: Percent | None = None
    # How long the step may take to reach its traffic and its analysis' verdict (pauses do not count); past
    # it, onProgressDeadline applies as for the new cluster's own deadline.
    progress_deadline_seconds: PositiveInt | None = None

    @field_validator("pause", mode="before")
    @classmethod
    def _pause_is_a_duration(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, str):
            raise ValueError(f'must be a Go duration string (e.g. "30s") or "{INDEFINITE}", got {value!r}')
        pause_seconds(value)
        return value

    @model_validator(mode="after")
    def _does_something(self) -> RolloutStep:
        if self.traffic is None and self.pause is None and self.analysis is None and self.mirror is None:
            raise ValueError("a step needs traffic, pause, analysis or mirror")
        if self.traffic is not None and self.mirror is not None:
            raise ValueError("mirror and traffic are separate steps: a traffic step ends the mirror")
        return self


class HttpProbe(SpecModel):
    """Provider 1: requests to the new cluster's Serve endpoint through its own Service."""

    path: str = "/"
    samples: Annotated[int, Field(gt=0, le=1000, strict=True)] = 20
    # The activity heartbeats once per sample (30 s heartbeat timeout): a sample's wait stays below it.
    interval_seconds: Annotated[int, Field(gt=0, le=20, strict=True)] = 1
    min_success_rate: Annotated[float, Field(ge=0, le=1)] = 1.0
    latency_percentile: Annotated[float, Field(gt=0, le=100)] = 95
    max_latency_ms: PositiveInt | None = None
    timeout_seconds: Annotated[int, Field(gt=0, le=20, strict=True)] = 2  # no answer by then: a failed sample


class OnGateError(StrEnum):
    """What a gate run that could not measure (Prometheus unreachable, the query refused, no sample) is."""

    FAIL = "Fail"  # a failed gate: the upgrade rolls back
    INCONCLUSIVE = "Inconclusive"  # no verdict: the gate runs again a little later (deadlines still apply)


class PrometheusQuery(SpecModel):
    """Provider 2: a PromQL instant query whose value must satisfy `successCondition` (e.g. "< 0.01")."""

    address: Annotated[str, Field(pattern=r"^https?://[^\s/]+")]
    query: Annotated[str, Field(min_length=1)]
    success_condition: Annotated[str, Field(pattern=r"^\s*(<|<=|>|>=|==|!=)\s*-?[0-9.]+(e-?[0-9]+)?\s*$")]
    timeout_seconds: PositiveInt = 10
    on_error: OnGateError = OnGateError.FAIL


class ServeStatusCheck(SpecModel):
    """Provider 3: every Serve application of the new cluster RUNNING (none DEPLOY_FAILED or UNHEALTHY)."""

    applications: list[str] | None = None  # None: all of them


class Analysis(SpecModel):
    name: Annotated[str, Field(min_length=1)]
    http: HttpProbe | None = None
    prometheus: PrometheusQuery | None = None
    serve_status: ServeStatusCheck | None = None

    @model_validator(mode="after")
    def _one_provider(self) -> Analysis:
        given = [p for p in (self.http, self.prometheus, self.serve_status) if p is not None]
        if len(given) != 1:
            raise ValueError("an analysis needs exactly one of http, prometheus, serveStatus")
        return self


class HeaderCanary(SpecModel):
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")]
    value: Annotated[str, Field(min_length=1)]


class RolloutSettings(SpecModel):
    steps: Annotated[list[RolloutStep], Field(max_length=MAX_STEPS)] = Field(default_factory=list)
    analyses: list[Analysis] = Field(default_factory=list)
    progress_deadline_seconds: PositiveInt | None = None
    on_progress_deadline: OnProgressDeadline = OnProgressDeadline.ABORT
    on_unhealthy: OnUnhealthy = OnUnhealthy.ABORT
    revision_history_limit: Annotated[int, Field(ge=0, strict=True)] = 10
    # NewCluster (blue-green) only: a gate before the Service switch, a manual one (`promote`), and a gate
    # after it, before the old cluster is deleted (a failure switches back).
    pre_promotion_analysis: str | None = None
    auto_promotion_enabled: bool = True
    post_promotion_analysis: str | None = None
    header_canary: HeaderCanary | None = None
    # An upgrade aborted or rolled back keeps its new cluster this long (no traffic, out of the Services)
    # before deleting it; None: deleted after rayClusterDeletionDelaySeconds, as any cluster left over.
    abort_scale_down_delay_seconds: (
        Annotated[int, Field(gt=0, le=MAX_ABORT_SCALE_DOWN_DELAY_SECONDS, strict=True)] | None
    ) = None

    @model_validator(mode="after")
    def _consistent(self) -> RolloutSettings:
        names = [analysis.name for analysis in self.analyses]
        duplicate = next((name for name in names if names.count(name) > 1), None)
        if duplicate is not None:
            raise ValueError(f'analyses: the name "{duplicate}" is used twice')
        for field, value in (
            ("prePromotionAnalysis", self.pre_promotion_analysis),
            ("postPromotionAnalysis", self.post_promotion_analysis),
        ):
            if value is not None and value not in names:
                raise ValueError(f'{field}: no analysis named "{value}" in analyses')
        last = 0
        for index, step in enumerate(self.steps):
            if step.analysis is not None and step.analysis not in names:
                raise ValueError(f'steps[{index}].analysis: no analysis named "{step.analysis}" in analyses')
            if step.traffic is not None:
                if step.traffic < last:
                    raise ValueError(
                        f"steps[{index}].traffic: {step.traffic} is less than an earlier step's {last}; "
                        "traffic only grows during an upgrade (abort rolls back)"
                    )
                last = step.traffic
        return self

    def traffic_steps(self) -> list[int]:
        return [step.traffic for step in self.steps if step.traffic is not None]

    def first_mirror_step(self) -> int | None:
        """The index of the first step that mirrors requests (mirror above 0), None without one."""
        return next((index for index, step in enumerate(self.steps) if step.mirror), None)


def rollout_settings(annotations: Mapping[str, str]) -> RolloutSettings | None:
    """The annotation read and checked (None without it); ValueError with a message naming the field."""
    return annotation_model(annotations, ANNOTATION_ROLLOUT, "steps: [{traffic: 5}]", RolloutSettings)


def rollout_error(annotations: Mapping[str, str]) -> str | None:
    """Why the annotation is rejected, or None."""
    try:
        rollout_settings(annotations)
    except ValueError as problem:
        return str(problem)
    return None


def rollout_strategy_error(annotations: Mapping[str, str], incremental: bool) -> str | None:
    """Why the (valid) annotation does not fit the RayService's upgrade strategy, or None: a mirror needs
    the Gateway of a NewClusterWithIncrementalUpgrade, which carries the traffic and copies it."""
    try:
        settings = rollout_settings(annotations)
    except ValueError:
        return None  # rollout_error says why
    index = settings.first_mirror_step() if settings is not None else None
    if index is None or incremental:
        return None
    return (
        f"{ANNOTATION_ROLLOUT}: steps[{index}].mirror: mirroring needs upgradeStrategy.type "
        "NewClusterWithIncrementalUpgrade (with the RayServiceIncrementalUpgrade feature gate): only there "
        "does a Gateway carry the traffic and copy it to the new cluster"
    )
