"""API fault injection: errors (500, 409, 429 with Retry-After, ...) and latency per verb and resource.

Rules are set in code (`FaultInjector.set_rules`) or over HTTP at `/sandbox/faults` on the API server, so
tests in other processes can use them: `POST` a JSON rule list (replacing the current one), `GET` to read it
back with the counts of injected faults, `DELETE` to clear. A rule in JSON:

    {"verbs": ["create", "patch"], "resources": ["rayclusters"], "errorRate": 0.3, "status": 429,
     "retryAfterSeconds": 1, "latencyMs": 50, "times": 10}

Every field is optional: verbs and resources default to all ("*"), errorRate to 0 (latency only) unless a
status is given (then 1), times to unlimited. Resources are plurals, `plural/subresource` for subresources.
The random source is seeded, so a run with the same requests injects the same faults.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

_REASONS = {
    409: "Conflict",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True)
class FaultRule:
    verbs: frozenset[str] = frozenset({"*"})
    resources: frozenset[str] = frozenset({"*"})
    error_rate: float = 0.0
    status: int = 500
    retry_after_seconds: int = 1
    latency_seconds: float = 0.0
    times: int | None = None  # inject at most this many errors, then only the latency

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"errorRate must be within 0..1, got {self.error_rate}")
        if not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error code, got {self.status}")
        if self.latency_seconds < 0:
            raise ValueError("latency must not be negative")

    def applies_to(self, verb: str, resource: str) -> bool:
        return ("*" in self.verbs or verb in self.verbs) and (
            "*" in self.resources or resource in self.resources
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaultRule:
        known = {
            "verb",
            "verbs",
            "resource",
            "resources",
            "errorRate",
            "status",
            "retryAfterSeconds",
            "latencyMs",
            "latencySeconds",
            "times",
        }
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault rule fields: {sorted(unknown)}")

        def names(single: str, plural: str) -> frozenset[str]:
            values = data.get(plural, [data[single]] if single in data else ["*"])
            if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                raise ValueError(f"{plural} must be a list of strings")
            return frozenset(values)

        status = int(data.get("status", 500))
        default_rate = 1.0 if "status" in data else 0.0
        latency = float(data.get("latencySeconds", float(data.get("latencyMs", 0)) / 1000.0))
        times = data.get("times")
        return cls(
            verbs=names("verb", "verbs"),
            resources=names("resource", "resources"),
            error_rate=float(data.get("errorRate", default_rate)),
            status=status,
            retry_after_seconds=int(data.get("retryAfterSeconds", 1)),
            latency_seconds=latency,
            times=int(times) if times is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "verbs": sorted(self.verbs),
            "resources": sorted(self.resources),
            "errorRate": self.error_rate,
            "status": self.status,
            "retryAfterSeconds": self.retry_after_seconds,
            "latencyMs": self.latency_seconds * 1000.0,
            "times": self.times,
        }


@dataclass(frozen=True)
class Fault:
    """What to do to one request: wait `latency_seconds`, then fail with `status` if it is set."""

    latency_seconds: float = 0.0
    status: int | None = None
    retry_after_seconds: int | None = None

    @property
    def reason(self) -> str:
        return _REASONS.get(self.status or 500, "InternalError")

    def message(self, verb: str, resource: str) -> str:
        return f"injected fault: {self.status} {self.reason} for {verb} {resource}"


@dataclass
class _RuleState:
    rule: FaultRule
    injected: int = 0


@dataclass
class FaultInjector:
    seed: int = 0
    _rules: list[_RuleState] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def set_rules(self, rules: list[FaultRule], seed: int | None = None) -> None:
        self._rules = [_RuleState(rule) for rule in rules]
        if seed is not None:
            self.seed = seed
            self._random = random.Random(seed)

    def add(self, rule: FaultRule) -> None:
        self._rules.append(_RuleState(rule))

    def clear(self) -> None:
        self._rules = []

    @property
    def rules(self) -> list[FaultRule]:
        return [state.rule for state in self._rules]

    def decide(self, verb: str, resource: str) -> Fault | None:
        """The fault for one request, or None. Latencies of all matching rules add up; the first matching rule
        whose dice roll fails the request decides the error."""
        latency, status, retry_after = 0.0, None, None
        for state in self._rules:
            rule = state.rule
            if not rule.applies_to(verb, resource):
                continue
            latency += rule.latency_seconds
            exhausted = rule.times is not None and state.injected >= rule.times
            if (
                status is None
                and not exhausted
                and rule.error_rate > 0
                and self._random.random() < rule.error_rate
            ):
                state.injected += 1
                status = rule.status
                retry_after = rule.retry_after_seconds if rule.status == 429 else None
        if latency == 0.0 and status is None:
            return None
        return Fault(latency, status, retry_after)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "rules": [{**state.rule.to_json(), "injected": state.injected} for state in self._rules],
        }

    def load_json(self, body: Any) -> None:
        """Replace the rules from `{"rules": [...], "seed": N}`, a list of rules, or one rule."""
        if isinstance(body, dict) and "rules" in body:
            rules, seed = body["rules"], body.get("seed")
        elif isinstance(body, list):
            rules, seed = body, None
        elif isinstance(body, dict):
            rules, seed = [body], None
        else:
            raise ValueError('expected a fault rule, a list of rules or {"rules": [...]}')
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise ValueError("rules must be a list of objects")
        self.set_rules([FaultRule.from_json(r) for r in rules], int(seed) if seed is not None else None)


class ApiError(Exception):
    """An error the API server reports as a `Status` body with this HTTP status code."""

    def __init__(self, status: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.status,
        }
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.reason!r}, {self.message!r})"
