"""The Temporal server's static config (persistence and advanced visibility on PostgreSQL through the
`postgres12` plugin, one host running all four services, every port given) and its dynamic config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandbox.temporalserver.postgres import PostgresCluster

SERVICES = ("frontend", "history", "matching", "worker")
# Production's default is 4 for a development box and hundreds for a cluster; a shard is the unit of
# history's concurrency, so one host on 2 cores gains nothing from more.
HISTORY_SHARDS = 4


@dataclass(frozen=True)
class ServerPorts:
    """Each service's gRPC and membership port, and the frontend's HTTP port (Nexus callbacks land there)."""

    grpc: dict[str, int]
    membership: dict[str, int]
    frontend_http: int

    @property
    def frontend(self) -> str:
        return f"127.0.0.1:{self.grpc['frontend']}"


def _datastore(postgres: PostgresCluster, database: str, connections: int) -> dict[str, Any]:
    return {
        "sql": {
            "pluginName": "postgres12",
            "databaseName": database,
            "connectAddr": f"{postgres.host}:{postgres.port}",
            "connectProtocol": "tcp",
            "user": postgres.user,
            "password": postgres.password,
            "maxConns": connections,
            "maxIdleConns": connections,
            "maxConnLifetime": "1h",
        }
    }


def server_config(
    postgres: PostgresCluster, ports: ServerPorts, dynamic_config: str, log_level: str = "warn"
) -> dict[str, Any]:
    """The config file `temporal-server --config-file` reads."""
    services = {
        name: {
            "rpc": {
                "grpcPort": ports.grpc[name],
                "membershipPort": ports.membership[name],
                "bindOnIP": "127.0.0.1",
                **({"httpPort": ports.frontend_http} if name == "frontend" else {}),
            }
        }
        for name in SERVICES
    }
    return {
        "log": {"stdout": True, "level": log_level},
        "persistence": {
            "defaultStore": "postgres-default",
            "visibilityStore": "postgres-visibility",
            "numHistoryShards": HISTORY_SHARDS,
            "datastores": {
                "postgres-default": _datastore(postgres, "temporal", 20),
                "postgres-visibility": _datastore(postgres, "temporal_visibility", 10),
            },
        },
        "global": {"membership": {"maxJoinDuration": "30s", "broadcastAddress": "127.0.0.1"}},
        "services": services,
        "clusterMetadata": {
            "enableGlobalNamespace": False,
            "failoverVersionIncrement": 10,
            "masterClusterName": "active",
            "currentClusterName": "active",
            "clusterInformation": {
                "active": {
                    "enabled": True,
                    "initialFailoverVersion": 1,
                    "rpcName": "frontend",
                    "rpcAddress": ports.frontend,
                }
            },
        },
        "dcRedirectionPolicy": {"policy": "noop"},
        "dynamicConfigClient": {"filepath": dynamic_config, "pollInterval": "10s"},
    }


def dynamic_config(ports: ServerPorts) -> dict[str, Any]:
    """What raypilot needs beyond the server's defaults: Nexus callbacks to this frontend (the `raypilot`
    Nexus service, docs/nexus.md). Worker Versioning (deployment versions, the workflow APIs) is on by
    default in this server version."""
    callback = f"http://127.0.0.1:{ports.frontend_http}/namespaces/{{{{.NamespaceName}}}}/nexus/callback"
    return {
        "component.nexusoperations.callback.endpoint.template": [{"value": callback}],
        "callback.allowedAddresses": [{"value": [{"Pattern": "127.0.0.1:*", "AllowInsecure": True}]}],
    }
