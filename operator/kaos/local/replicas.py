"""The replicas of one workload: one supervised process each, and requests spread across them.

A Deployment with ``replicas: N`` runs N processes, each on its own loopback port. The
workload's own port (its ``status.endpoint``, what dependents are given) is then served by a
small TCP balancer that hands each new connection to the next ready replica, as a Service
does in a cluster; the gateway picks the next ready replica for every request
(``pick_port``). With one replica the process listens on the workload's port itself and
nothing stands in between.

``Replicas`` answers what the control plane asks a single ``Supervisor``: ready (any replica
ready), pid, restarts, message, crash_looping; plus ``count`` and ``ready_count`` for the
status's replicas/readyReplicas.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from pathlib import Path
from typing import Callable, Sequence

from kaos.local.containers import LocalProcess
from kaos.local.ports import LOOPBACK
from kaos.local.supervisor import Supervisor

log = logging.getLogger("kaos.local")

PIPE_CHUNK = 64 * 1024


def replica_log_path(log_path: Path, index: int) -> Path:
    """Replica 0 logs to the workload's log file, replica i to ``<name>-<i>.log`` beside it."""
    return log_path if index == 0 else log_path.with_name(f"{log_path.stem}-{index}{log_path.suffix}")


class Replicas:
    def __init__(self, processes: Sequence[LocalProcess], port: int, log_path: Path, on_change: Callable[[], None]):
        self.processes = tuple(processes)
        self.port = port
        self.supervisors = [Supervisor(process, replica_log_path(log_path, index), on_change)
                            for index, process in enumerate(self.processes)]
        self._turn = itertools.count()
        self._balancer: asyncio.Server | None = None

    # what the control plane reads

    @property
    def count(self) -> int:
        return len(self.supervisors)

    @property
    def ready_count(self) -> int:
        return sum(1 for supervisor in self.supervisors if supervisor.ready)

    @property
    def ready(self) -> bool:
        return self.ready_count > 0

    @property
    def pid(self) -> int | None:
        return self.supervisors[0].pid if self.supervisors else None

    @property
    def pids(self) -> list[int | None]:
        return [supervisor.pid for supervisor in self.supervisors]

    @property
    def restarts(self) -> int:
        return sum(supervisor.restarts for supervisor in self.supervisors)

    @property
    def crash_looping(self) -> bool:
        return bool(self.supervisors) and all(supervisor.crash_looping for supervisor in self.supervisors)

    @property
    def exits_before_ready(self) -> int:
        return max((supervisor.exits_before_ready for supervisor in self.supervisors), default=0)

    @property
    def last_exit(self) -> int | None:
        return next((s.last_exit for s in self.supervisors if s.last_exit is not None), None)

    @property
    def message(self) -> str:
        messages = [s.message for s in self.supervisors if s.message]
        if not messages or self.count == 1:
            return messages[0] if messages else ""
        return f"{len(messages)} of {self.count} replicas: {messages[0]}"

    def pick_port(self) -> int | None:
        """The next ready replica's port (round robin), or None when none is ready."""
        ready = [s.spec.port for s in self.supervisors if s.ready]
        if not ready:
            return None
        return ready[next(self._turn) % len(ready)]

    # lifecycle

    async def start(self) -> None:
        if self.count > 1:
            self._balancer = await asyncio.start_server(self._forward, LOOPBACK, self.port)
        for supervisor in self.supervisors:
            supervisor.start()

    async def stop(self) -> None:
        if self._balancer is not None:
            self._balancer.close()
            await self._balancer.wait_closed()
            self._balancer = None
        await asyncio.gather(*(supervisor.stop() for supervisor in self.supervisors))

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection to the workload's port, piped to the next ready replica."""
        port = self.pick_port()
        try:
            if port is None:
                return
            upstream_reader, upstream_writer = await asyncio.open_connection(LOOPBACK, port)
        except OSError:
            writer.close()
            return
        finally:
            if port is None:
                writer.close()
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(PIPE_CHUNK):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass
