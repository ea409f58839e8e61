"""The RayClusters of the RayService fake world (`raypilot.testing.rayservice_world`): a cluster's head and
worker Pods, its Ray Serve applications and replicas, and the log entry of every act the world records."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from models.naming import ANNOTATION_HASH, LABEL_SERVE


@dataclass
class LoggedAct:
    at: datetime
    verb: str
    kind: str
    name: str
    detail: Any = None


@dataclass
class FakeCluster:
    body: dict[str, Any]
    head_ready: bool = True
    serve_mode: str = "running"  # running | deploying | failed | down (dashboard does not answer)
    config: dict[str, Any] | None = None
    head_generation: int = 1
    head_labels: dict[str, str] = field(default_factory=lambda: {LABEL_SERVE: "false"})
    # Worker Pods are recreated (generation + 1) when deleted; each group's Pods run the spec hash the
    # cluster had when they were created, as KubeRay's RayCluster controller creates them from the template.
    worker_generations: dict[str, int] = field(default_factory=dict)
    pod_hashes: dict[str, str] = field(default_factory=dict)

    def pods(self) -> list[dict[str, Any]]:
        """The head and worker Pods, Running and Ready, labelled as KubeRay labels them."""
        ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        found: list[dict[str, Any]] = []
        head = self.head_pod()
        if head is not None:
            head["metadata"]["labels"].update({"ray.io/node-type": "head", "ray.io/group": "headgroup"})
            found.append({**head, "status": {**head["status"], **ready}})
        for group in (self.body.get("spec") or {}).get("workerGroupSpecs") or []:
            name = group["groupName"]
            generation = self.worker_generations.setdefault(name, 1)
            for index in range(int(group.get("replicas") or group.get("minReplicas") or 0)):
                pod_name = f"{self.name}-{name}-worker-{generation}-{index}"
                labels = {"ray.io/node-type": "worker", "ray.io/group": name}
                found.append(
                    {
                        "metadata": {"name": pod_name, "uid": f"uid-{pod_name}", "labels": labels},
                        "status": ready,
                    }
                )
        for pod in found:
            group = pod["metadata"]["labels"]["ray.io/group"]
            self.pod_hashes.setdefault(
                self._pod_key(pod), self.body["metadata"]["annotations"].get(ANNOTATION_HASH, "")
            )
            pod["metadata"]["annotations"] = {
                "fake/spec-hash": self.pod_hashes[self._pod_key(pod)],
                "fake/group": group,
            }
        return found

    @staticmethod
    def _pod_key(pod: dict[str, Any]) -> str:
        return str(pod["metadata"]["name"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    def obj(self) -> dict[str, Any]:
        body = copy.deepcopy(self.body)
        conditions = [
            {
                "type": "HeadPodReady",
                "status": "True" if self.head_ready else "False",
                "reason": "HeadPodRunning",
            }
        ]
        body["status"] = {"state": "ready" if self.head_ready else "", "conditions": conditions}
        return body

    def head_pod(self) -> dict[str, Any] | None:
        if not self.head_ready:
            return None
        return {
            "metadata": {
                "name": f"{self.name}-head-{self.head_generation}",
                "uid": f"uid-{self.name}-head-{self.head_generation}",
                "labels": dict(self.head_labels),
            },
            "spec": {"containers": [{"name": "ray-head"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        }

    def details(self) -> dict[str, Any] | None:
        if self.serve_mode == "down":
            return None
        applications: dict[str, Any] = {}
        capacity = (self.config or {}).get("target_capacity")
        for app in (self.config or {}).get("applications") or []:
            deployments: dict[str, Any] = {}
            for deployment in app.get("deployments") or [{"name": "default", "num_replicas": 1}]:
                wanted = int(deployment.get("num_replicas", 1))
                target = wanted if capacity is None else math.ceil(wanted * float(capacity) / 100)
                running = target if self.serve_mode == "running" else 0
                deployments[deployment["name"]] = {
                    "status": "HEALTHY" if self.serve_mode == "running" else "UPDATING",
                    "message": "",
                    "target_num_replicas": target,
                    "replicas": [
                        {"replica_id": f"r{rank}", "state": "RUNNING", "rank": rank, "world_size": wanted}
                        for rank in range(running)
                    ],
                }
            status = {"running": "RUNNING", "deploying": "DEPLOYING", "failed": "DEPLOY_FAILED"}[
                self.serve_mode
            ]
            applications[app.get("name", "default")] = {
                "status": status,
                "message": "",
                "deployments": deployments,
            }
        return {"applications": applications, "target_capacity": capacity}

    def serving(self) -> bool:
        details = self.details()
        apps = (details or {}).get("applications") or {}
        return bool(apps) and all(app["status"] == "RUNNING" for app in apps.values())

    def worker_replicas(self) -> int:
        groups = (self.body.get("spec") or {}).get("workerGroupSpecs") or []
        return sum(int(group.get("replicas") or group.get("minReplicas") or 0) for group in groups)
