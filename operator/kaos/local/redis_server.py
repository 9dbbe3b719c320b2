"""The platform's Redis under ``kaos up``: one ``redis-server`` for every Agent that asks for
``spec.memory.backend: redis`` without a URL of its own (the local twin of the platform
chart's ``memory.redis.deploy``).

It is started on first use, on its own loopback port, supervised like any workload
(restarted when it exits), with its data in ``$KAOS_HOME/redis/`` (append-only file, so
sessions outlive a ``kaos down``/``kaos up``). Each agent keeps its keys under
``kaos:<namespace>:agent:<name>``. Without the ``redis-server`` program the agents that need
it are Failed with a message saying what to install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kaos.local.containers import LocalProcess
from kaos.local.ports import LOOPBACK, free_port
from kaos.local.supervisor import Supervisor

PROGRAM = "redis-server"
MISSING = (
    "spec.memory.backend redis needs a Redis, and `kaos up` runs one with the `redis-server` program, "
    "which is not installed: install it (Debian/Ubuntu: apt-get install redis-server; scripts/setup-test does), "
    "or set spec.memory.redis.url to a Redis that runs elsewhere"
)


class LocalRedis:
    def __init__(self, home: Path, which: Callable[[str], str | None], on_change: Callable[[], None], env: dict):
        self.folder = home / "redis"
        self.log_path = home / "logs" / "redis-server.log"
        self.which = which
        self.on_change = on_change
        self.env = env
        self._port: int | None = None
        self.supervisor: Supervisor | None = None

    @property
    def url(self) -> str:
        if self._port is None:
            self._port = free_port()
        return f"redis://{LOOPBACK}:{self._port}/0"

    @property
    def ready(self) -> bool:
        return self.supervisor is not None and self.supervisor.ready

    def ensure(self) -> str:
        """Start redis-server unless it runs; "" when it runs (or is starting), else why it cannot."""
        if self.supervisor is not None:
            return ""
        program = self.which(PROGRAM)
        if program is None:
            return MISSING
        self.folder.mkdir(parents=True, exist_ok=True)
        port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        argv = (program, "--port", str(port), "--bind", LOOPBACK, "--protected-mode", "yes",
                "--dir", str(self.folder), "--save", "", "--appendonly", "yes")
        process = LocalProcess(name="redis-server", argv=argv, env=tuple(sorted(self.env.items())), port=port)
        self.supervisor = Supervisor(process, self.log_path, self.on_change)
        self.supervisor.start()
        return ""

    async def stop(self) -> None:
        if self.supervisor is not None:
            await self.supervisor.stop()
            self.supervisor = None
