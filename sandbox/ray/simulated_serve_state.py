"""Serve's controller, simulated: applications, deployments and replicas moving through Ray 2.60's states.

`SimulatedServeState.apply(config)` takes a validated `ServeDeploySchema` (as a plain dict) the way the
controller's deploy_apps does; `tick(now)` advances replicas and statuses like one controller loop. Observed
on a real head and reproduced here:
- a new or re-imported app is DEPLOYING with no deployments and no route prefix while it builds; an
  import path the simulation cannot import ends DEPLOY_FAILED with a ModuleNotFoundError traceback;
- new deployments are UPDATING/CONFIG_UPDATE_STARTED, then HEALTHY/CONFIG_UPDATE_COMPLETED; a target change
  alone is UPSCALING or DOWNSCALING, completing with UPSCALE_/DOWNSCALE_COMPLETED;
- a user_config change reconfigures replicas in place (UPDATING), other option changes roll replicas over in
  batches of rolling_update_percentage; downscaling stops starting replicas first, then the highest ranks;
- apps left out of a PUT are DELETING until their replicas stopped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

from sandbox.ray.simulated_replicas import (
    AutoscalingBounds,
    Direction,
    ReplicaView,
    autoscaling_target_num_replicas,
    capacity_adjusted_num_replicas,
    replicas_to_stop,
    settled_ranks,
    smallest_free_rank,
    target_capacity_direction,
)
from sandbox.ray.simulated_timings import SimulationTimings

# Deployments defined in code of apps this repository ships (the simulation cannot import user code).
KNOWN_APP_DEPLOYMENTS: dict[str, tuple[str, ...]] = {"sandbox.apps.versioned:app": ("Versioned",)}
_HEAVY_APP_FIELDS = ("import_path", "runtime_env", "args")
_HEAVY_DEPLOYMENT_FIELDS = (
    "ray_actor_options",
    "placement_group_bundles",
    "placement_group_strategy",
    "max_replicas_per_node",
)
ACTIVE_STATES = frozenset({"STARTING", "UPDATING", "RUNNING"})


def _random_id(length: int = 8) -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=length))


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def import_error(import_path: str, runtime_env: dict[str, Any] | None) -> str | None:
    """Why the simulation cannot build an app, or None. Code shipped in a runtime_env (working_dir,
    py_modules) is trusted to import; otherwise the module must be importable here (it is not imported)."""
    if runtime_env and (runtime_env.get("working_dir") or runtime_env.get("py_modules")):
        return None
    module = import_path.split(":", 1)[0] if ":" in import_path else import_path.rsplit(".", 1)[0]
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        try:
            found = importlib.util.find_spec(prefix) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"ModuleNotFoundError: No module named '{prefix}'"
    return None


def app_deployment_names(app_config: dict[str, Any]) -> list[str]:
    """Deployments of an app: those its code defines (known apps) or, for other code, those the config
    lists (the last listed taken as ingress), else one named after the imported attribute."""
    listed = [deployment["name"] for deployment in app_config.get("deployments", [])]
    known = KNOWN_APP_DEPLOYMENTS.get(app_config["import_path"])
    if known is not None:
        return list(known)
    if listed:
        return listed
    return [app_config["import_path"].replace(":", ".").rsplit(".", 1)[-1]]


@dataclass
class SimulatedReplica:
    replica_id: str
    version: str
    rank: int
    state: str
    until: float
    start_time_s: float
    answer_version: str


@dataclass
class SimulatedDeployment:
    name: str
    options: dict[str, Any]
    version: str = ""
    target: int = 0
    status: str = "UPDATING"
    trigger: str = "CONFIG_UPDATE_STARTED"
    completion: str = "CONFIG_UPDATE_COMPLETED"
    replicas: list[SimulatedReplica] = field(default_factory=list)
    answer_version: str = "unknown"

    @property
    def autoscaling(self) -> AutoscalingBounds | None:
        config = self.options.get("autoscaling_config")
        if config is None and self.options.get("num_replicas") != "auto":
            return None
        merged = {"min_replicas": 1, "max_replicas": 100 if self.options.get("num_replicas") == "auto" else 1}
        merged.update(config or {})
        return AutoscalingBounds.from_config(merged)


@dataclass
class SimulatedApp:
    name: str
    config: dict[str, Any]
    status: str = "DEPLOYING"
    message: str = ""
    route_prefix: str | None = None
    build_until: float | None = None
    deployments: dict[str, SimulatedDeployment] = field(default_factory=dict)
    deleting: bool = False
    hide_deployments: bool = True  # while a new or re-imported app builds, Serve lists no deployments
    last_deployed_time_s: float = 0.0

    @property
    def ingress(self) -> SimulatedDeployment | None:
        names = app_deployment_names(self.config)
        return self.deployments.get(names[-1]) if names else None


class SimulatedServeState:
    def __init__(self, timings: SimulationTimings, *, head_env: dict[str, str]) -> None:
        self._timings = timings
        self._head_env = head_env
        self.apps: dict[str, SimulatedApp] = {}
        self.target_capacity: float | None = None
        self._direction: Direction | None = None
        self._app_names: frozenset[str] | None = None

    def apply(self, config: dict[str, Any], now: float, wall: float) -> None:
        """Take a whole declarative config: listed apps are (re)deployed, the others deleted."""
        names = frozenset(app["name"] for app in config["applications"])
        new_capacity = config.get("target_capacity")
        self._direction = target_capacity_direction(
            self._app_names, self.target_capacity, names, new_capacity, self._direction
        )
        self._app_names, self.target_capacity = names, new_capacity
        for app_config in config["applications"]:
            self._apply_app(app_config, now, wall)
        for app in self.apps.values():
            if app.name not in names and not app.deleting:
                app.deleting, app.status, app.build_until = True, "DELETING", None
                for deployment in app.deployments.values():
                    self._stop(deployment, deployment.replicas, now)

    def _apply_app(self, app_config: dict[str, Any], now: float, wall: float) -> None:
        # Every PUT rebuilds each listed app; an unchanged import is quick and keeps its deployments listed.
        app = self.apps.get(app_config["name"])
        if app is None or app.deleting:
            app = self.apps[app_config["name"]] = SimulatedApp(name=app_config["name"], config=app_config)
        heavy = (
            app.hide_deployments
            or app.status == "DEPLOY_FAILED"
            or any(app.config.get(key) != app_config.get(key) for key in _HEAVY_APP_FIELDS)
        )
        app.config, app.status, app.message = app_config, "DEPLOYING", ""
        app.hide_deployments = heavy
        app.build_until = now + (self._timings.app_build_s if heavy else self._timings.tick_s)
        app.last_deployed_time_s = wall

    def _answer_version(self, app: SimulatedApp, options: dict[str, Any]) -> str:
        user_config = options.get("user_config") or {}
        if isinstance(user_config, dict) and user_config.get("version") is not None:
            return str(user_config["version"])
        env_vars = (app.config.get("runtime_env") or {}).get("env_vars") or {}
        return str(env_vars.get("APP_VERSION") or self._head_env.get("APP_VERSION") or "unknown")

    def _apply_deployments(self, app: SimulatedApp, now: float) -> None:
        listed = {options["name"]: options for options in app.config.get("deployments", [])}
        names = app_deployment_names(app.config)
        for name in set(app.deployments) - set(names):
            self._stop(app.deployments[name], app.deployments[name].replicas, now)
        for name in names:
            options = listed.get(name, {"name": name})
            version = _fingerprint(
                [app.config.get(key) for key in _HEAVY_APP_FIELDS],
                [options.get(key) for key in _HEAVY_DEPLOYMENT_FIELDS],
            )
            deployment = app.deployments.get(name)
            is_new = deployment is None
            if deployment is None:
                deployment = app.deployments[name] = SimulatedDeployment(name=name, options=options)
            changed = is_new or deployment.options != options or deployment.version != version
            scaling_changed = is_new or deployment.options.get("autoscaling_config") != options.get(
                "autoscaling_config"
            )
            reconfigure = not is_new and deployment.options.get("user_config") != options.get("user_config")
            deployment.options, deployment.version = options, version
            deployment.answer_version = self._answer_version(app, options)
            target = self._target(deployment, config_changed=scaling_changed)
            if reconfigure:
                for replica in deployment.replicas:
                    if replica.state in ACTIVE_STATES and replica.version == version:
                        replica.state, replica.until = "UPDATING", now + self._timings.replica_update_s
                        replica.answer_version = deployment.answer_version
            if changed:
                deployment.status, deployment.completion = "UPDATING", "CONFIG_UPDATE_COMPLETED"
                deployment.trigger = "CONFIG_UPDATE_STARTED"
            elif target != deployment.target:
                upscale = target > deployment.target
                deployment.status = "UPSCALING" if upscale else "DOWNSCALING"
                deployment.completion = "UPSCALE_COMPLETED" if upscale else "DOWNSCALE_COMPLETED"
                deployment.trigger = "CONFIG_UPDATE_STARTED"
            deployment.target = target

    def _target(self, deployment: SimulatedDeployment, *, config_changed: bool) -> int:
        bounds = deployment.autoscaling
        if bounds is None:
            replicas = deployment.options.get("num_replicas")
            return capacity_adjusted_num_replicas(
                replicas if isinstance(replicas, int) else 1, self.target_capacity
            )
        return autoscaling_target_num_replicas(
            bounds, deployment.target, self.target_capacity, self._direction, config_changed=config_changed
        )

    def _stop(self, deployment: SimulatedDeployment, replicas: list[SimulatedReplica], now: float) -> None:
        for replica in replicas:
            if replica.state != "STOPPING":
                replica.state, replica.until = "STOPPING", now + self._timings.replica_stop_s

    def tick(self, now: float, wall: float) -> None:
        """One controller loop: finish transitions, scale toward targets, settle ranks, derive statuses."""
        for app in list(self.apps.values()):
            if app.build_until is not None and now >= app.build_until:
                app.build_until, app.hide_deployments = None, False
                error = import_error(app.config["import_path"], app.config.get("runtime_env"))
                if error is not None:
                    app.status, app.route_prefix = "DEPLOY_FAILED", None
                    app.message = _deploy_failure(app.name, error)
                    continue
                app.route_prefix = app.config.get("route_prefix", "/")
                self._apply_deployments(app, now)
            for deployment in list(app.deployments.values()):
                self._advance(deployment, now)
                if not app.deleting and deployment.name in app_deployment_names(app.config):
                    self._reconcile(deployment, now, wall)
                elif not deployment.replicas:
                    del app.deployments[deployment.name]
            if app.deleting and not app.deployments:
                del self.apps[app.name]
            elif not app.deleting and app.build_until is None and app.status != "DEPLOY_FAILED":
                healthy = all(deployment.status == "HEALTHY" for deployment in app.deployments.values())
                app.status = "RUNNING" if healthy and app.deployments else "DEPLOYING"

    def _advance(self, deployment: SimulatedDeployment, now: float) -> None:
        for replica in list(deployment.replicas):
            if replica.until > now:
                continue
            if replica.state == "STOPPING":
                deployment.replicas.remove(replica)
            elif replica.state in ("STARTING", "UPDATING"):
                replica.state = "RUNNING"

    def _reconcile(self, deployment: SimulatedDeployment, now: float, wall: float) -> None:
        active = [replica for replica in deployment.replicas if replica.state in ACTIVE_STATES]
        old = [replica for replica in active if replica.version != deployment.version]
        surplus = len(active) - deployment.target
        if surplus > 0:
            views = [
                ReplicaView(
                    replica.replica_id,
                    replica.state == "STARTING",
                    replica.rank + (1 << 20) * (replica in old),
                )
                for replica in active
            ]
            stopping = set(replicas_to_stop(views, surplus))
            self._stop(deployment, [replica for replica in active if replica.replica_id in stopping], now)
        elif surplus < 0:
            for _ in range(-surplus):
                self._start(deployment, now, wall)
        elif old and not any(replica.state == "STARTING" for replica in active):
            rolling = float(deployment.options.get("rolling_update_percentage", 0.2))
            batch = max(1, int(rolling * deployment.target))
            self._stop(deployment, old[:batch], now)
        live = [replica for replica in deployment.replicas if replica.state != "STOPPING"]
        settled = (
            len(live) == deployment.target
            and all(replica.state == "RUNNING" and replica.version == deployment.version for replica in live)
            and len(live) == len(deployment.replicas)
        )
        if settled:
            ranks = settled_ranks({replica.replica_id: replica.rank for replica in live})
            for replica in live:
                replica.rank = ranks[replica.replica_id]
            if deployment.status != "HEALTHY":
                deployment.status, deployment.trigger = "HEALTHY", deployment.completion

    def _start(self, deployment: SimulatedDeployment, now: float, wall: float) -> None:
        taken = [replica.rank for replica in deployment.replicas if replica.state != "STOPPING"]
        deployment.replicas.append(
            SimulatedReplica(
                replica_id=_random_id(),
                version=deployment.version,
                rank=smallest_free_rank(taken),
                state="STARTING",
                until=now + self._timings.replica_start_s,
                start_time_s=wall,
                answer_version=deployment.answer_version,
            )
        )


def _deploy_failure(app_name: str, error: str) -> str:
    return (
        f"Deploying app '{app_name}' failed with exception:\nTraceback (most recent call last):\n"
        '  File "ray/serve/_private/application_state.py", in build_serve_application\n'
        f"{error}\n"
    )
