"""The node's Service data plane: the real kube-proxy (built by `make kube`), in nftables mode, in the node's
network namespace (network.py), as a cluster's kube-proxy DaemonSet runs beside each kubelet.

It authenticates as kubeadm's kube-proxy does: the ServiceAccount kube-system/kube-proxy, bound to the
built-in ClusterRole system:node-proxier, with a token the agent renews before it expires (client-go reads
`tokenFile` again as it changes). It reaches the API server through the agent's forwarder on the node's
address, under the name the serving certificate carries. `--masquerade-all`: a pod that calls a Service whose
endpoint sits on the same bridge gets its answer back through the node (the bridge would otherwise hand the
reply straight to the caller, past the connection's translation); it needs no br_netfilter on the host.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sandbox.nodeagent.network import NodeNetwork
from sandbox.nodeagent.serviceaccount import API_HOST, API_PORT

__all__ = ["ACCOUNT", "KubeProxy", "kube_proxy_argv"]

log = logging.getLogger(__name__)
ACCOUNT = ("kube-system", "kube-proxy")
TOKEN_SECONDS = 24 * 3600
STOP_WITHIN_S = 10.0


def kube_proxy_argv(binary: str, kubeconfig: Path, node: str, network: NodeNetwork) -> list[str]:
    """kube-proxy's command line, run in the node's namespace. Its health and metrics ports are that
    namespace's own; it leaves the conntrack sysctls alone (the node's namespace is not the machine)."""
    return [
        "ip",
        "netns",
        "exec",
        network.netns,
        binary,
        f"--kubeconfig={kubeconfig}",
        f"--hostname-override={node}",
        "--proxy-mode=nftables",
        f"--cluster-cidr={network.network}",
        "--masquerade-all",
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0s",
        "--conntrack-tcp-timeout-close-wait=0s",
        "--metrics-bind-address=127.0.0.1:10249",
        "--healthz-bind-address=127.0.0.1:10256",
        "--v=1",
    ]


def _kubeconfig(node_ip: str, ca_file: str, token_file: Path) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "cluster",
                "cluster": {
                    "server": f"https://{node_ip}:{API_PORT}",
                    "tls-server-name": API_HOST,
                    "certificate-authority": ca_file,
                },
            }
        ],
        "users": [{"name": "kube-proxy", "user": {"tokenFile": str(token_file)}}],
        "contexts": [{"name": "kube-proxy", "context": {"cluster": "cluster", "user": "kube-proxy"}}],
        "current-context": "kube-proxy",
    }


def _created_or_there(create: Callable[[], object]) -> None:
    """Create; an object of that name already there (409: an agent before this one made it) is fine."""
    try:
        create()
    except ApiException as error:
        if error.status != 409:
            raise


def _end_with_the_agent() -> None:
    """PR_SET_PDEATHSIG: an agent killed with SIGKILL leaves no kube-proxy behind (the next agent removes the
    node's namespace, not the processes in it)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


class KubeProxy:
    """Started once the agent's forwarder to the API server listens; `stop` ends it."""

    def __init__(
        self, api: k8s.ApiClient, binary: str, node: str, network: NodeNetwork, directory: Path
    ) -> None:
        self.api, self.binary, self.node, self.network = api, binary, node, network
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None
        self._renewing: asyncio.Task[None] | None = None

    @property
    def token_file(self) -> Path:
        return self.directory / "token"

    async def start(self, log_file: Path) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(self._grant)
        await self._write_token()
        kubeconfig = self.directory / "kubeconfig"
        ca_file = str(self.api.configuration.ssl_ca_cert or "")
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(self.network.node_ip, ca_file, self.token_file)))
        self._spawn(kubeconfig, log_file)
        self._renewing = asyncio.ensure_future(self._renew())

    def _spawn(self, kubeconfig: Path, log_file: Path) -> None:
        with log_file.open("ab") as out:
            self.process = subprocess.Popen(
                kube_proxy_argv(self.binary, kubeconfig, self.node, self.network),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_end_with_the_agent,
            )

    def _grant(self) -> None:
        """The ServiceAccount and its binding to system:node-proxier (kept when they exist)."""
        namespace, name = ACCOUNT
        core, rbac = k8s.CoreV1Api(self.api), k8s.RbacAuthorizationV1Api(self.api)
        _created_or_there(
            lambda: core.create_namespaced_service_account(
                namespace, k8s.V1ServiceAccount(metadata={"name": name})
            )
        )
        binding = k8s.V1ClusterRoleBinding(
            metadata=k8s.V1ObjectMeta(name="raypilot:node-proxier"),
            role_ref=k8s.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:node-proxier"
            ),
            subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name=name, namespace=namespace)],
        )
        _created_or_there(lambda: rbac.create_cluster_role_binding(binding))

    async def _write_token(self) -> None:
        namespace, name = ACCOUNT
        request = k8s.AuthenticationV1TokenRequest(
            spec=k8s.V1TokenRequestSpec(audiences=[], expiration_seconds=TOKEN_SECONDS)
        )
        answer = await asyncio.to_thread(
            k8s.CoreV1Api(self.api).create_namespaced_service_account_token, name, namespace, request
        )
        if answer.status is None or not answer.status.token:
            raise RuntimeError("the API server answered kube-proxy's TokenRequest without a token")
        partial = self.token_file.with_suffix(".new")
        partial.write_text(str(answer.status.token))
        partial.chmod(0o600)
        partial.replace(self.token_file)

    async def _renew(self) -> None:
        wait_s = TOKEN_SECONDS * 0.8
        while True:
            await asyncio.sleep(wait_s)
            try:
                await self._write_token()
                wait_s = TOKEN_SECONDS * 0.8
            except (ApiException, OSError, RuntimeError) as error:
                log.warning("renewing kube-proxy's token failed (tried again in a minute): %s", error)
                wait_s = 60

    async def stop(self) -> None:
        if self._renewing is not None:
            self._renewing.cancel()
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            await asyncio.to_thread(self.process.wait, STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            await asyncio.to_thread(self.process.wait)
