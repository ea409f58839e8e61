"""`ServeInstanceDetails` JSON (GET /api/serve/applications/) from the simulated Serve state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.ray.simulated_serve_state import SimulatedApp, SimulatedDeployment, SimulatedServeState

EMPTY_INSTANCE_DETAILS: dict[str, Any] = {
    "controller_info": {},
    "proxies": {},
    "applications": {},
    "target_capacity": None,
}
# What a real 2.60 head reports for options left unset (deployment_config is the effective config).
DEPLOYMENT_DEFAULTS: dict[str, Any] = {
    "max_ongoing_requests": 5,
    "max_queued_requests": -1,
    "user_config": None,
    "graceful_shutdown_wait_loop_s": 2.0,
    "graceful_shutdown_timeout_s": 20.0,
    "health_check_period_s": 10.0,
    "health_check_timeout_s": 30.0,
    "ray_actor_options": {"num_cpus": 1.0},
    "rolling_update_percentage": 0.2,
    "max_surge_percent": 0,
}
AUTOSCALING_DEFAULTS: dict[str, Any] = {
    "min_replicas": 1,
    "initial_replicas": None,
    "max_replicas": 1,
    "target_ongoing_requests": 2,
    "look_back_period_s": 30.0,
    "downscale_delay_s": 600.0,
    "upscale_delay_s": 30.0,
}


@dataclass(frozen=True)
class ServeIdentity:
    """The fake identifiers of this simulated node and its Serve actors."""

    node_id: str
    node_ip: str
    controller_actor_id: str
    proxy_actor_id: str


def _actor(identity: ServeIdentity, actor_id: str, actor_name: str, log_file: str) -> dict[str, Any]:
    return {
        "node_id": identity.node_id,
        "node_ip": identity.node_ip,
        "node_instance_id": "",
        "actor_id": actor_id,
        "actor_name": actor_name,
        "worker_id": (actor_id * 2)[:56],
        "log_file_path": log_file,
    }


def deployment_config(deployment: SimulatedDeployment) -> dict[str, Any]:
    config: dict[str, Any] = {"name": deployment.name}
    if deployment.autoscaling is None:
        num_replicas = deployment.options.get("num_replicas")
        config["num_replicas"] = num_replicas if isinstance(num_replicas, int) else 1
    for key, default in DEPLOYMENT_DEFAULTS.items():
        config[key] = deployment.options.get(key, default)
    if deployment.autoscaling is not None:
        config["autoscaling_config"] = {
            **AUTOSCALING_DEFAULTS,
            **(deployment.options.get("autoscaling_config") or {}),
        }
    return config


def required_resources(options: dict[str, Any]) -> dict[str, float]:
    actor_options = options.get("ray_actor_options") or {}
    resources: dict[str, float] = {"CPU": float(actor_options.get("num_cpus", 1))}
    if actor_options.get("num_gpus"):
        resources["GPU"] = float(actor_options["num_gpus"])
    if actor_options.get("memory"):
        resources["memory"] = float(actor_options["memory"])
    resources.update(actor_options.get("resources") or {})
    return resources


def _deployment(
    identity: ServeIdentity, app: SimulatedApp, deployment: SimulatedDeployment
) -> dict[str, Any]:
    return {
        "name": deployment.name,
        "status": deployment.status,
        "status_trigger": deployment.trigger,
        "message": "",
        "deployment_config": deployment_config(deployment),
        "target_num_replicas": deployment.target,
        "required_resources": required_resources(deployment.options),
        "replicas": [
            {
                **_actor(
                    identity,
                    replica.replica_id.ljust(32, "0"),
                    f"SERVE_REPLICA::{app.name}#{deployment.name}#{replica.replica_id}",
                    f"/serve/replica_{app.name}_{deployment.name}_{replica.replica_id}.log",
                ),
                "replica_id": replica.replica_id,
                "state": replica.state,
                "pid": None,
                "start_time_s": replica.start_time_s,
            }
            for replica in deployment.replicas
        ],
        "recent_dead_replicas": [],
    }


def _application(identity: ServeIdentity, app: SimulatedApp) -> dict[str, Any]:
    deployments = {} if app.hide_deployments else app.deployments
    ingress = app.ingress
    return {
        "name": app.name,
        "route_prefix": app.route_prefix,
        "docs_path": None,
        "status": app.status,
        "message": app.message,
        "last_deployed_time_s": app.last_deployed_time_s,
        "deployed_app_config": app.config,
        "source": "declarative",
        "deployments": {name: _deployment(identity, app, item) for name, item in deployments.items()},
        "external_scaler_enabled": bool(app.config.get("external_scaler_enabled", False)),
        "deployment_topology": {
            "app_name": app.name,
            "nodes": {
                name: {
                    "name": name,
                    "app_name": app.name,
                    "outbound_deployments": [],
                    "is_ingress": item is ingress,
                }
                for name, item in deployments.items()
            },
            "ingress_deployment": ingress.name if ingress is not None and deployments else None,
        },
    }


def instance_details(
    state: SimulatedServeState,
    identity: ServeIdentity,
    *,
    http_options: dict[str, Any],
    grpc_options: dict[str, Any],
    proxy_location: str,
    api_type: str | None,
) -> dict[str, Any]:
    """The GET body while Serve runs; `api_type="imperative"` lists no apps (all simulated apps are
    declarative)."""
    proxy_name = f"SERVE_PROXY_ACTOR-{identity.node_id}"
    apps = {} if api_type == "imperative" else state.apps
    return {
        "controller_info": _actor(
            identity, identity.controller_actor_id, "SERVE_CONTROLLER_ACTOR", "/serve/controller.log"
        ),
        "proxy_location": proxy_location,
        "http_options": http_options,
        "grpc_options": grpc_options,
        "proxies": {
            identity.node_id: {
                **_actor(
                    identity, identity.proxy_actor_id, proxy_name, f"/serve/proxy_{identity.node_ip}.log"
                ),
                "status": "HEALTHY",
            }
        },
        "applications": {name: _application(identity, app) for name, app in apps.items()},
        "target_capacity": state.target_capacity,
        "target_groups": [
            {
                "targets": [
                    {
                        "ip": identity.node_ip,
                        "port": http_options.get("port"),
                        "instance_id": "",
                        "name": proxy_name,
                    }
                ],
                "route_prefix": "/",
                "protocol": "HTTP",
                "app_name": "",
                "ingress_request_router_targets": [],
                "ingress_deployment_name": "",
            }
        ],
        "restores_unset_config_options": True,
    }
