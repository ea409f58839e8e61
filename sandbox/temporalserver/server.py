"""`temporal_on_postgres`: the Temporal server from temporal/build.sh on a private PostgreSQL cluster, with
a namespace and its search attributes registered, stopped by PID (server first, then
PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import yaml
from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    GetSystemInfoRequest,
    RegisterNamespaceRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from sandbox.realkube.controlplane import log_file_tail, stop_process
from sandbox.temporalserver.build import TemporalBuild, TemporalNotBuiltError, temporal_build
from sandbox.temporalserver.config import SERVICES, ServerPorts, dynamic_config, server_config
from sandbox.temporalserver.postgres import PostgresCluster, postgres_unavailable, private_postgres

DATABASES = {"temporal": "temporal", "temporal_visibility": "visibility"}  # database -> its schema
READY_WITHIN_S = 120.0
STOP_WITHIN_S = 20.0
RETENTION = timedelta(days=1)
LOW_PORTS = (20000, 32768)  # [from, to): below the ephemeral range; see low_free_port


@dataclass(frozen=True)
class TemporalOnPostgres:
    address: str  # the frontend's gRPC host:port
    namespace: str
    server_pid: int
    postgres_pid: int
    server_log: Path
    ready_s: float  # from starting temporal-server to the namespace and its search attributes in place


def temporal_on_postgres_unavailable() -> str | None:
    """Why the server cannot start here (None when it can): PostgreSQL missing, or nothing built yet."""
    missing = postgres_unavailable()
    if missing:
        return missing
    try:
        temporal_build()
    except TemporalNotBuiltError as error:
        return f"the Temporal server is not built ({error})"
    return None


def _sql_tool(build: TemporalBuild, postgres: PostgresCluster, database: str, *argv: str) -> None:
    # The password goes by environment, not argv (where `ps` shows it).
    env = {
        **os.environ,
        "SQL_HOST": postgres.host,
        "SQL_PORT": str(postgres.port),
        "SQL_USER": postgres.user,
        "SQL_PASSWORD": postgres.password,
        "SQL_PLUGIN": "postgres12",
        "SQL_DATABASE": database,
    }
    done = subprocess.run([str(build.sql_tool), *argv], env=env, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"temporal-sql-tool {' '.join(argv)} on {database} failed ({done.returncode}): "
            f"{(done.stdout + done.stderr).strip()[-2000:]}"
        )


def create_databases(build: TemporalBuild, postgres: PostgresCluster) -> None:
    """Each database made and brought to the newest schema version the build ships, as an operator does."""
    for database, schema in DATABASES.items():
        _sql_tool(build, postgres, database, "create-database")
        _sql_tool(build, postgres, database, "setup-schema", "-v", "0.0")
        _sql_tool(build, postgres, database, "update-schema", "-d", str(build.versioned_schema(schema)))


_HANDED_OUT: set[int] = set()


def low_free_port() -> int:
    """A port free on 127.0.0.1 now below 32768, never one this process handed out before. The PostgreSQL
    schema keeps each host's RPC port in a smallint (cluster_membership.rpc_port): a port of the kernel's
    ephemeral range (32768-60999, where binding port 0 lands) is out of its range, and the server exits at
    its first membership heartbeat."""
    while True:
        port = random.randrange(LOW_PORTS[0], LOW_PORTS[1])
        if port in _HANDED_OUT:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port


def _ports() -> ServerPorts:
    return ServerPorts(
        grpc={name: low_free_port() for name in SERVICES},
        membership={name: low_free_port() for name in SERVICES},
        frontend_http=low_free_port(),
    )


async def _connected(address: str, process: subprocess.Popen[bytes], log: Path) -> Client:
    """A client once the frontend answers (its system info needs history and matching up too)."""
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"temporal-server exited ({process.returncode}):\n{log_file_tail(log, 20)}")
        try:
            client = await Client.connect(address, namespace="temporal-system")
            await client.workflow_service.get_system_info(GetSystemInfoRequest())
            return client
        except (RuntimeError, RPCError) as error:
            if time.monotonic() >= deadline:
                late = f"temporal-server not answering within {READY_WITHIN_S} s:\n{log_file_tail(log, 20)}"
                raise RuntimeError(late) from error
            await asyncio.sleep(0.2)


async def register_namespace(client: Client, namespace: str) -> None:
    """The namespace, registered unless it is there, once the frontend describes it."""
    retention = Duration()
    retention.FromTimedelta(RETENTION)
    try:
        await client.workflow_service.register_namespace(
            RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=retention)
        )
    except RPCError as error:
        if error.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        try:
            await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
            return
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)


async def add_keyword_attributes(client: Client, namespace: str, names: Sequence[str]) -> None:
    """`names` registered as Keyword search attributes of the namespace (an operator's step; raypilot's worker
    would add the missing ones itself), usable once this returns."""
    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=dict.fromkeys(names, keyword))
        )
    except RPCError as error:
        if error.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    await until_search_attributes_usable(client, namespace, names)


async def until_search_attributes_usable(client: Client, namespace: str, names: Sequence[str]) -> None:
    """Until the frontend accepts a query naming every one of `names`. With SQL
    visibility an attribute is a namespace's alias of a column, kept in the namespace record: the add writes
    it at once (a list reads it back), but starts and queries check it against each service's namespace
    cache, which refreshes every 2 s (system.namespaceCacheRefreshInterval). A start in between fails with
    "no mapping defined for search attribute"."""
    query = " AND ".join(f"{name} = ''" for name in names)
    scoped = await Client.connect(client.service_client.config.target_host, namespace=namespace)
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        try:
            await scoped.count_workflows(query)
            return
        except RPCError as error:
            if error.status != RPCStatusCode.INVALID_ARGUMENT or time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def temporal_on_postgres(
    directory: Path, *, namespace: str = "default", search_attributes: Sequence[str] = ()
) -> AsyncIterator[TemporalOnPostgres]:
    """The running server with `namespace` and its Keyword `search_attributes` (raypilot's are in
    workflows/search_attributes.py); its config and logs go to `directory` (server.yaml, dynamic.yaml,
    server.log, postgres.log)."""
    build = temporal_build()
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    with private_postgres(directory) as postgres:
        await asyncio.to_thread(create_databases, build, postgres)
        ports = _ports()
        log = directory / "server.log"
        began = time.monotonic()
        process = await asyncio.to_thread(_launch, build, postgres, ports, directory)
        try:
            client = await _connected(ports.frontend, process, log)
            await register_namespace(client, namespace)
            if search_attributes:
                await add_keyword_attributes(client, namespace, search_attributes)
            yield TemporalOnPostgres(
                ports.frontend, namespace, process.pid, postgres.process.pid, log, time.monotonic() - began
            )
        finally:
            await asyncio.to_thread(stop_process, process, STOP_WITHIN_S)


def _launch(
    build: TemporalBuild,
    postgres: PostgresCluster,
    ports: ServerPorts,
    directory: Path,
    log_level: str = "warn",
) -> subprocess.Popen[bytes]:
    """temporal-server with its config files written into `directory`, logging to server.log there."""
    dynamic = directory / "dynamic.yaml"
    dynamic.write_text(yaml.safe_dump(dynamic_config(ports)))
    config = directory / "server.yaml"
    config.touch(mode=0o600)  # it holds the database password
    config.write_text(yaml.safe_dump(server_config(postgres, ports, str(dynamic))))
    with (directory / "server.log").open("ab") as out:
        return subprocess.Popen(
            [str(build.server), "--config-file", str(config), "--allow-no-auth", "start"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
