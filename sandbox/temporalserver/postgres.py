"""A private PostgreSQL cluster from Debian's packages: initdb in a fresh directory, one server listening on
127.0.0.1 at a free port (no Unix socket, no system service), password authentication over TCP, stopped by
PID. PostgreSQL refuses to run as root, so where we are root it runs as Debian's `postgres` account."""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox.realkube.controlplane import free_port, log_file_tail

POSTGRES_ROOT = Path("/usr/lib/postgresql")  # Debian's layout: <root>/<major>/bin/{initdb,postgres}
ROOT_RUNS_AS = "postgres"  # the account Debian's postgresql package makes
SUPERUSER = "temporal"
READY_WITHIN_S = 30.0
STOP_WITHIN_S = 15.0
BIND_ATTEMPTS = 5


class PostgresError(RuntimeError):
    """The cluster did not start (the message ends with its log's last lines)."""


@dataclass(frozen=True)
class PostgresCluster:
    process: subprocess.Popen[bytes]
    port: int
    user: str
    password: str
    log: Path

    @property
    def host(self) -> str:
        return "127.0.0.1"


def postgres_bin_dir() -> Path | None:
    """The newest installed major version's bin/ holding initdb and postgres, None when there is none."""
    found = [
        path / "bin"
        for path in POSTGRES_ROOT.glob("*")
        if (path / "bin" / "initdb").is_file() and (path / "bin" / "postgres").is_file()
    ]
    return max(found, key=lambda bin_dir: int(bin_dir.parent.name)) if found else None


def postgres_unavailable() -> str | None:
    """Why a private cluster cannot start here (None when it can)."""
    if postgres_bin_dir() is None:
        return f"PostgreSQL's server is not installed ({POSTGRES_ROOT}/*/bin/postgres; Debian's postgresql)"
    if shutil.which("pg_isready") is None:
        return "pg_isready is not on PATH (Debian's postgresql-client)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(ROOT_RUNS_AS)
        except KeyError:
            return (
                f"running as root, PostgreSQL needs the {ROOT_RUNS_AS!r} account (Debian's package makes it)"
            )
    return None


def _account() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as, None to run it as ourselves."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(ROOT_RUNS_AS)
    return entry.pw_uid, entry.pw_gid


def _run_as(account: tuple[int, int] | None) -> dict[str, object]:
    if account is None:
        return {}
    uid, gid = account
    return {"user": uid, "group": gid, "extra_groups": []}


def _accepting(port: int) -> bool:
    done = subprocess.run(
        ["pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)], check=False, capture_output=True
    )
    return done.returncode == 0


def _wait_ready(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while not _accepting(port):
        if process.poll() is not None:
            raise PostgresError(f"postgres exited ({process.returncode}):\n{log_file_tail(log)}")
        if time.monotonic() >= deadline:
            raise PostgresError(f"postgres not accepting within {READY_WITHIN_S} s:\n{log_file_tail(log)}")
        time.sleep(0.1)


def stop_postgres(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT: roll back open transactions, checkpoint, exit), SIGKILL if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def private_postgres(directory: Path) -> Iterator[PostgresCluster]:
    """A running cluster whose superuser is `temporal` with a fresh random password. Its data lives in a
    temporary directory of its own (the account it runs as must reach it; `directory` may be private to us)
    and is removed afterwards; its log is copied to `directory/postgres.log`."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise PostgresError(postgres_unavailable() or "PostgreSQL is not installed")
    account = _account()
    home = Path(tempfile.mkdtemp(prefix="raypilot-postgres-"))
    try:
        if account is not None:
            os.chown(home, *account)
        data, log, password_file = home / "data", home / "postgres.log", home / "password"
        password = secrets.token_urlsafe(24)
        password_file.write_text(password + "\n")
        if account is not None:
            os.chown(password_file, *account)
        password_file.chmod(0o600)
        initdb = subprocess.run(
            [
                str(bin_dir / "initdb"),
                "--pgdata",
                str(data),
                "--username",
                SUPERUSER,
                "--pwfile",
                str(password_file),
                "--auth-local=reject",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",  # only initdb's own files: the server runs with fsync on, as in production
            ],
            check=False,
            capture_output=True,
            text=True,
            **_run_as(account),  # type: ignore[call-overload]
        )
        if initdb.returncode != 0:
            raise PostgresError(f"initdb failed ({initdb.returncode}): {initdb.stderr.strip()[-2000:]}")
        password_file.unlink()
        process = _start(bin_dir, data, log, account)
        try:
            yield PostgresCluster(process[0], process[1], SUPERUSER, password, log)
        finally:
            stop_postgres(process[0])
            with contextlib.suppress(OSError):
                shutil.copyfile(log, directory / "postgres.log")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _start(
    bin_dir: Path, data: Path, log: Path, account: tuple[int, int] | None
) -> tuple[subprocess.Popen[bytes], int]:
    """postgres on a free port, tried again on another when that one was taken before the bind."""
    for attempt in range(1, BIND_ATTEMPTS + 1):
        port = free_port()
        with log.open("ab") as out:
            if account is not None:
                os.chown(log, *account)
            process = subprocess.Popen(
                [
                    str(bin_dir / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "unix_socket_directories=",
                    "-c",
                    "max_connections=200",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **_run_as(account),  # type: ignore[call-overload]
            )
        try:
            _wait_ready(process, port, log)
            return process, port
        except PostgresError as error:
            stop_postgres(process)
            if attempt == BIND_ATTEMPTS or "could not bind" not in str(error):
                raise
    raise AssertionError("unreachable")
