"""A real ``redis-server`` for a test: a free loopback port, a temp folder, stopped at the end.

Debian's ``redis-server`` (installed by scripts/setup-test). Nothing is persisted to disk, so a
restart on the same port (``stop()`` then ``start()``) is an empty Redis, as after a crash of
a Redis without persistence.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from kaos.local.ports import free_port
from tests.support.processes import stop_process, wait_serving

REDIS_SERVER = "redis-server"


def require_redis_server() -> str:
    path = shutil.which(REDIS_SERVER)
    if path is None:
        pytest.fail("redis-server is not installed: run scripts/setup-test (apt-get install redis-server)")
    return path


class RedisServer:
    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = Path(folder)
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "redis.log", "ab")
        self.process = subprocess.Popen(
            [require_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        wait_serving(self.process, self._pong, 15, f"redis-server on port {self.port}", self.log)
        return self

    def _pong(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)
        self.process = None

    def command(self, *args: str) -> str:
        """One command with redis-cli semantics kept minimal: the raw reply line(s) decoded."""
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        try:
            return client.execute_command(*args)
        finally:
            client.close()

    def keys(self, pattern: str = "*") -> list[str]:
        return sorted(self.command("KEYS", pattern))
