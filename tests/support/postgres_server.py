"""A real PostgreSQL with pgvector for a test: a free loopback port, a temp folder, stopped at the end.

The server is the one the ``pgserver`` package ships (PostgreSQL with pgvector, installed by
scripts/setup-test; only its binaries are used, nothing of it is imported). PostgreSQL refuses to
run as root: as root, the server runs as ``nobody`` in a folder it owns. Password authentication
over TCP on 127.0.0.1 (``postgresql://kaos:kaos@127.0.0.1:<port>/kaos``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from kaos.local.ports import free_port
from tests.support.processes import stop_process, wait_serving

PASSWORD = "kaos"


def postgres_bin() -> Path:
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        pytest.fail("pgserver (PostgreSQL with pgvector) is not installed: run scripts/setup-test")
    install = Path(spec.origin).parent / "pginstall"
    return (install if os.geteuid() != 0 or _open_to_others(install) else _copy_open_to_others(install)) / "bin"


def _open_to_others(path: Path) -> bool:
    """Whether another user (``nobody``) can reach ``path``: every folder above it searchable."""
    return all(folder.stat().st_mode & 0o001 for folder in (path, *path.parents))


def _copy_open_to_others(install: Path) -> Path:
    """A copy of the install that ``nobody`` can run, kept in /var/tmp per install (a clone made
    with ``mktemp -d``, mode 0700, holds its venv where ``nobody`` cannot reach it). The binaries
    find their libraries at ``$ORIGIN/../../../pgserver.libs`` (the wheel's RPATH): the copy keeps
    that layout."""
    site = install.parent.parent
    key = f"{install.stat().st_ino}-{int(install.stat().st_mtime)}"
    copy = Path("/var/tmp") / f"kaos-pgserver-{key}"
    if not (copy / "pgserver" / "pginstall" / "bin" / "postgres").exists():
        partial = Path(tempfile.mkdtemp(prefix="kaos-pgserver-", dir="/var/tmp"))
        shutil.copytree(install, partial / "pgserver" / "pginstall", symlinks=True)
        shutil.copytree(site / "pgserver.libs", partial / "pgserver.libs", symlinks=True)
        for folder in (partial, partial / "pgserver"):
            folder.chmod(0o755)
        try:
            partial.rename(copy)
        except OSError:  # another test session made it first
            shutil.rmtree(partial, ignore_errors=True)
    return copy / "pgserver" / "pginstall"


class PostgresServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="kaos-pg-"))
        self.data = self.folder / "data"
        self.process: subprocess.Popen | None = None
        self._user = "nobody" if os.geteuid() == 0 else None
        self._initialized = False

    @property
    def url(self) -> str:
        return f"postgresql://kaos:{PASSWORD}@127.0.0.1:{self.port}/kaos"

    def _as_user(self) -> dict:
        return {"user": self._user, "group": "nogroup"} if self._user else {}

    def _init(self) -> None:
        self.folder.chmod(0o755)
        if self._user:
            shutil.chown(self.folder, self._user, "nogroup")
        password_file = self.folder / "password"
        password_file.write_text(PASSWORD)
        if self._user:
            shutil.chown(password_file, self._user, "nogroup")
        subprocess.run([str(postgres_bin() / "initdb"), "-D", str(self.data), "-U", "kaos", "--auth=scram-sha-256",
                        f"--pwfile={password_file}", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True, cwd=self.folder, **self._as_user())
        self._initialized = True

    def start(self) -> "PostgresServer":
        if not self._initialized:
            self._init()
        log = open(self.folder / "postgres.log", "ab")
        self.process = subprocess.Popen(
            [str(postgres_bin() / "postgres"), "-D", str(self.data), "-p", str(self.port), "-h", "127.0.0.1",
             "-k", str(self.folder), "-c", "fsync=off", "-c", "max_connections=50"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, **self._as_user())
        log.close()
        wait_serving(self.process, lambda: self.sql("postgres", "select 1"), 30,
                     f"postgres on port {self.port}", self.log, not_yet=(Exception,))
        if not (self.data / "created").exists():
            self.sql("postgres", "create database kaos")
            (self.data / "created").touch()
        return self

    def sql(self, database: str, statement: str, *parameters) -> list[tuple]:
        import psycopg

        url = self.url.rsplit("/", 1)[0] + "/" + database
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as connection:
            cursor = connection.execute(statement, parameters or None)
            return cursor.fetchall() if cursor.description else []

    def log(self) -> str:
        path = self.folder / "postgres.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def reachable(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, grace=15, stop_signal=signal.SIGINT)  # fast shutdown: clients are disconnected
        self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
