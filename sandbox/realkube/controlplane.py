"""A real Kubernetes control plane as local processes: etcd, kube-apiserver (RBAC, client certificates,
service-account tokens), kube-controller-manager and KubeRay's operator, from the binaries `make kube`
builds (kube/build.sh). Everything listens on 127.0.0.1 at free ports; each process logs to
`<directory>/logs/<name>.log`.

`control_plane` installs KubeRay's and the Gateway API's CRDs before KubeRay's operator starts (it watches
them); the operator runs as its own ServiceAccount with the ClusterRole of its module. There is no kubelet:
pods stay Pending until a node agent runs them (sandbox/realkube/node.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sandbox.go_cache import cached_build_dir
from sandbox.realkube.audit import write_audit_policy
from sandbox.realkube.certs import ControlPlaneCerts, make_control_plane_certs
from sandbox.realkube.conditions import condition_status

BUILD_SCRIPT = Path(__file__).parents[2] / "kube" / "build.sh"
# Set to a directory `kube/build.sh` printed to skip asking the script (e.g. a cache built elsewhere).
KUBE_DIR_ENV = "RAYPILOT_KUBE_DIR"
READY_WITHIN_S = 120.0
STOP_WITHIN_S = 15.0
# One /24 of this range per control plane on the machine: the host routes a plane's Service range to its
# node (sandbox/nodeagent/network.py), so two planes at once must not share one.
SERVICE_RANGES = ipaddress.IPv4Network("10.96.0.0/16")
SERVICE_RANGE_LOCKS = Path(tempfile.gettempdir()) / "raypilot-service-ranges"
KUBERAY_ACCOUNT = "kuberay-operator"
# The controllers a cluster without kubelets needs: node-lifecycle and pod-garbage-collector would act on pods
# of nodes that never report; the rest (deployments, replica sets, ...) raypilot and KubeRay do not use.
CONTROLLERS = (
    "serviceaccount-token-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "namespace-controller",
    "garbage-collector-controller",
    "job-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "ttl-after-finished-controller",
    "certificatesigningrequest-signing-controller",  # node agents' serving certificates (kubelet-serving)
    "clusterrole-aggregation-controller",  # fills the admin, edit and view roles users are bound to
)


class ControlPlaneError(RuntimeError):
    """A component did not start (the message names it and ends with its log's last lines)."""


def kube_dir(*, show_progress: bool = False, build: bool = True) -> Path:
    """The cache directory with bin/ and crds/: $RAYPILOT_KUBE_DIR, else what kube/build.sh prints (it returns
    at once when the cache is complete, and builds it otherwise, its progress on our stderr if asked; with
    `build=False` an incomplete cache raises instead)."""
    return cached_build_dir(
        BUILD_SCRIPT, KUBE_DIR_ENV, ControlPlaneError, build=build, show_progress=show_progress
    )


_HANDED_OUT: set[int] = set()
BIND_ATTEMPTS = 5


def free_port() -> int:
    """A port free on 127.0.0.1 now, never one this process handed out before (two servers started one after
    the other would otherwise be offered the same port). Another process may still take it before it is bound:
    `_start_until_listening` then tries again."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _start_until_listening(
    plane: ControlPlane, name: str, what: str, argv_for: Callable[[], list[str]], ready: Callable[[], bool]
) -> None:
    """Starts `name` with the flags `argv_for()` gives (fresh ports each call) until `ready()`: a port another
    process took between its choice and the bind costs one more try, not the control plane."""
    for attempt in range(1, BIND_ATTEMPTS + 1):
        plane.start(name, argv_for())
        try:
            plane.wait(what, name, ready)
            return
        except ControlPlaneError as error:
            if attempt == BIND_ATTEMPTS or "address already in use" not in str(error):
                raise
            stop_process(plane.processes[name], STOP_WITHIN_S)


def admin_kubeconfig(server: str, certs: ControlPlaneCerts) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "raypilot", "cluster": {"server": server, "certificate-authority": str(certs.ca_cert)}}
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": str(certs.admin_cert), "client-key": str(certs.admin_key)},
            }
        ],
        "contexts": [{"name": "raypilot", "context": {"cluster": "raypilot", "user": "admin"}}],
        "current-context": "raypilot",
    }


@dataclass
class ControlPlane:
    directory: Path
    kube: Path
    server: str
    certs: ControlPlaneCerts
    kubeconfig: Path
    service_cidr: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    argvs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def audit_log(self) -> Path:
        return self.log_path("audit")

    def binary(self, name: str) -> str:
        return str(self.kube / "bin" / name)

    def log_path(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.log"

    def start(self, name: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        self.log_path(name).parent.mkdir(parents=True, exist_ok=True)
        with self.log_path(name).open("ab") as log:
            process = subprocess.Popen(
                [self.binary(name), *argv], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self.processes[name] = process
        self.argvs[name] = list(argv)
        return process

    def restart(self, name: str) -> None:
        """Stops one component (SIGTERM, as a rolling update of a control plane does) and starts it again
        with the same flags, then waits until the API server is ready again (it reaches etcd for /readyz)."""
        stop_process(self.processes[name], STOP_WITHIN_S)
        self.start(name, self.argvs[name])
        self.wait(f"kube-apiserver /readyz after restarting {name}", name, self.readyz)

    def log_tail(self, name: str, lines: int = 15) -> str:
        return log_file_tail(self.log_path(name), lines)

    def kubectl(self, *argv: str, input_text: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            [self.binary("kubectl"), "--kubeconfig", str(self.kubeconfig), *argv],
            input=input_text,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and done.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def _admin_tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certs.ca_cert))
        context.load_cert_chain(str(self.certs.admin_cert), str(self.certs.admin_key))
        return context

    def readyz(self) -> bool:
        url = f"{self.server}/readyz"
        try:
            with urllib.request.urlopen(url, context=self._admin_tls(), timeout=5) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def get_json(self, path: str) -> dict[str, Any] | None:
        """GET `path` from the API server as the admin: the object, or None when the server does not answer
        with one (not found, not serving yet). For the waits that poll while the stack starts: a kubectl run
        per poll cost a process start, a TLS handshake and discovery each time, on a machine already busy
        starting the stack."""
        try:
            with urllib.request.urlopen(self.server + path, context=self._admin_tls(), timeout=10) as answer:
                found: dict[str, Any] = json.loads(answer.read())
                return found
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait(self, what: str, name: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + READY_WITHIN_S
        while time.monotonic() < deadline:
            process = self.processes[name]
            if process.poll() is not None:
                raise ControlPlaneError(f"{name} exited ({process.returncode}):\n{self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.2)
        raise ControlPlaneError(f"{what} not within {READY_WITHIN_S:.0f} s:\n{self.log_tail(name)}")

    def stop(self) -> None:
        """Stops every process, newest first: each gets SIGTERM, then SIGKILL after STOP_WITHIN_S."""
        for name in reversed(list(self.processes)):
            stop_process(self.processes.pop(name), STOP_WITHIN_S)


@contextlib.contextmanager
def service_range() -> Iterator[str]:
    """A Service range no other control plane on this machine holds, until the block ends: each /24 is held
    by a lock on a file of its own (released by the kernel if the holder dies)."""
    SERVICE_RANGE_LOCKS.mkdir(parents=True, exist_ok=True)
    for index, cidr in enumerate(SERVICE_RANGES.subnets(new_prefix=24)):
        lock = (SERVICE_RANGE_LOCKS / str(index)).open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        try:
            yield str(cidr)
        finally:
            lock.close()
        return
    raise ControlPlaneError(f"every Service range of {SERVICE_RANGES} is held by another control plane")


def log_file_tail(log: Path, lines: int = 15) -> str:
    """The last `lines` lines of a process' log, for an error message ("(no log)" when it cannot be read)."""
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


def stop_process(process: subprocess.Popen[bytes], within_s: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `within_s`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(within_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _start_etcd(plane: ControlPlane) -> str:
    client: list[str] = []

    def argv() -> list[str]:
        port = free_port()
        client[:] = [f"http://127.0.0.1:{port}", str(port)]
        peer = f"http://127.0.0.1:{free_port()}"
        return [
            "--name=raypilot",
            f"--data-dir={plane.directory / 'etcd'}",
            f"--listen-client-urls={client[0]}",
            f"--advertise-client-urls={client[0]}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=raypilot={peer}",
            f"--listen-metrics-urls=http://127.0.0.1:{free_port()}",
            "--unsafe-no-fsync",  # a sandbox's data is thrown away with it: no waits on the disk
            "--log-level=warn",
        ]

    _start_until_listening(plane, "etcd", "etcd listening", argv, lambda: _listening(int(client[1])))
    return client[0]


def _start_apiserver(plane: ControlPlane, etcd: str) -> None:
    certs = plane.certs

    def argv() -> list[str]:
        port = free_port()
        plane.server = f"https://127.0.0.1:{port}"
        plane.kubeconfig.write_text(yaml.safe_dump(admin_kubeconfig(plane.server, certs)))
        return [
            f"--etcd-servers={etcd}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={certs.serving_cert}",
            f"--tls-private-key-file={certs.serving_key}",
            f"--client-ca-file={certs.ca_cert}",
            f"--service-cluster-ip-range={plane.service_cidr}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={certs.service_account_pub}",
            f"--service-account-signing-key-file={certs.service_account_key}",
            "--allow-privileged=true",
            # No kubelet serves the `kubernetes` Service's endpoints; the default reconciler would report
            # 127.0.0.1, which Endpoints validation refuses.
            "--endpoint-reconciler-type=none",
            # Container logs come from the node agent's HTTPS API, at the Node's InternalIP, its certificate
            # signed by this CA (the kubelet-serving signer below).
            f"--kubelet-client-certificate={certs.kubelet_client_cert}",
            f"--kubelet-client-key={certs.kubelet_client_key}",
            f"--kubelet-certificate-authority={certs.ca_cert}",
            "--kubelet-preferred-address-types=InternalIP",
            # Who asked for what (sandbox/realkube/audit.py counts a client's requests by verb and resource).
            f"--audit-policy-file={write_audit_policy(plane.directory)}",
            f"--audit-log-path={plane.audit_log}",
            "--audit-log-maxsize=200",
            "--audit-log-maxbackup=1",
        ]

    _start_until_listening(plane, "kube-apiserver", "kube-apiserver /readyz", argv, plane.readyz)


def _start_controller_manager(plane: ControlPlane) -> None:
    certs = plane.certs
    plane.start(
        "kube-controller-manager",
        [
            f"--kubeconfig={plane.kubeconfig}",
            f"--authentication-kubeconfig={plane.kubeconfig}",
            f"--authorization-kubeconfig={plane.kubeconfig}",
            "--authentication-skip-lookup=true",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            "--leader-elect=false",
            f"--service-account-private-key-file={certs.service_account_key}",
            f"--root-ca-file={certs.ca_cert}",
            f"--cluster-signing-cert-file={certs.ca_cert}",
            f"--cluster-signing-key-file={certs.ca_key}",
            f"--controllers={','.join(CONTROLLERS)}",
        ],
    )


def grant_kuberay(plane: ControlPlane) -> None:
    """KubeRay's operator's own ServiceAccount (default/kuberay-operator), bound to the ClusterRole its module
    ships (config/rbac/role.yaml): the real API server holds it to what a KubeRay install may do."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": KUBERAY_ACCOUNT, "namespace": "default"},
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": KUBERAY_ACCOUNT},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "kuberay-operator",
        },
        "subjects": [{"kind": "ServiceAccount", "name": KUBERAY_ACCOUNT, "namespace": "default"}],
    }
    plane.kubectl("apply", "--server-side", "-f", str(plane.kube / "rbac" / "kuberay-operator.yaml"))
    plane.kubectl("apply", "--server-side", "-f", "-", input_text=yaml.safe_dump_all([account, binding]))


def _kuberay_kubeconfig(plane: ControlPlane) -> Path:
    """A kubeconfig of KubeRay's ServiceAccount, for the operator as a process beside the control plane."""
    grant_kuberay(plane)
    token = plane.kubectl("create", "token", KUBERAY_ACCOUNT, "-n", "default", "--duration=24h").strip()
    path = plane.directory / "kuberay.kubeconfig"
    path.write_text(yaml.safe_dump(token_kubeconfig(plane.server, plane.certs, KUBERAY_ACCOUNT, token)))
    path.chmod(0o600)
    return path


def token_kubeconfig(server: str, certs: ControlPlaneCerts, user: str, token: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "raypilot", "cluster": {"server": server, "certificate-authority": str(certs.ca_cert)}}
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "raypilot", "user": user}}],
        "current-context": user,
    }


def _start_kuberay(plane: ControlPlane, feature_gates: str) -> None:
    argv = [
        f"--kubeconfig={_kuberay_kubeconfig(plane)}",
        "--enable-leader-election=false",
        f"--metrics-addr=127.0.0.1:{free_port()}",
        f"--health-probe-bind-address=127.0.0.1:{free_port()}",
        "--log-stdout-encoder=console",
    ]
    if feature_gates:
        argv.append(f"--feature-gates={feature_gates}")
    plane.start("kuberay-operator", argv)


def install_crds(plane: ControlPlane, paths: Sequence[Path]) -> None:
    """Server-side apply (KubeRay's CRDs pass client-side apply's 256 KiB annotation limit), then waits until
    every CRD is Established. One kubectl for all the files, none of them parsed here: KubeRay's CRDs are
    3 MB of YAML, and reading them in Python and a kubectl per file made this step 9 s instead of 4."""
    plane.kubectl("apply", "--server-side", "--force-conflicts", *(f"--filename={path}" for path in paths))
    wait_established(plane)


def _all_established(plane: ControlPlane, names: Sequence[str]) -> bool:
    listed = plane.get_json("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    items = (listed or {}).get("items") or []
    if names:
        items = [crd for crd in items if crd["metadata"]["name"] in names]
        if len(items) < len(set(names)):
            return False
    return bool(items) and all(condition_status(crd, "Established") == "True" for crd in items)


def wait_established(plane: ControlPlane, names: Sequence[str] = ()) -> None:
    """Until every CRD of `names` (all of them when empty) is Established. Polled here rather than with
    `kubectl wait --for=condition=Established`, which fails at once ("<nil> is of the type <nil>") when it
    reads a CRD whose status the API server has not written yet, as happened on a loaded machine."""
    plane.wait("the CRDs Established", "kube-apiserver", lambda: _all_established(plane, names))


def yaml_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.glob("*.yaml") if path.name != "kustomization.yaml")


@contextlib.contextmanager
def control_plane(
    directory: Path, *, controllers: bool = True, kuberay: bool = True, kuberay_feature_gates: str = ""
) -> Iterator[ControlPlane]:
    """A running control plane in `directory`, stopped when the block ends. `kuberay`: KubeRay's operator as a
    process beside it, for a plane without a node (with a node, sandbox/realkube/kuberay.py runs it as a pod,
    as it is installed in a cluster)."""
    kube = kube_dir()
    directory.mkdir(parents=True, exist_ok=True)
    certs = make_control_plane_certs(directory / "pki", ())
    kubeconfig = directory / "admin.kubeconfig"
    kubeconfig.touch(mode=0o600)
    with service_range() as cidr:
        plane = ControlPlane(directory, kube, "", certs, kubeconfig, cidr)  # the server's URL once it listens
        try:
            etcd = _start_etcd(plane)
            _start_apiserver(plane, etcd)
            install_crds(
                plane, [*yaml_files(kube / "crds" / "kuberay"), *yaml_files(kube / "crds" / "gateway-api")]
            )
            if controllers:
                _start_controller_manager(plane)
            if kuberay:
                _start_kuberay(plane, kuberay_feature_gates)
            yield plane
        finally:
            plane.stop()
