"""Run one workload process like a kubelet runs a pod: restart on exit, probe readiness.

Each process gets its own process group (so that a stop kills everything it spawned) and,
on Linux, dies with the control plane even if the control plane is killed outright.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

import httpx

from kaos.backoff import exponential
from kaos.local.containers import LOOPBACK, LocalProcess

BACKOFF_START = 0.5
BACKOFF_MAX = 30.0
# A process that stayed up this long starts again from the shortest backoff, as in Kubernetes.
BACKOFF_RESET_AFTER = 60.0
PROBE_INTERVAL = 0.1
# Once ready, probe like the kubelet's defaults: every few seconds, and only a run of
# failures (not one slow answer) takes the process out of the gateway.
READY_PROBE_PERIOD = 2.0
READY_FAILURE_THRESHOLD = 3
# Exits in a row without ever becoming ready after which the workload counts as crash-looping.
CRASH_LOOP_AFTER = 3
STOP_GRACE = 5.0


def restart_delay(failures: int) -> float:
    """Exponential backoff after the n-th consecutive exit (1, 2, ...)."""
    return exponential(failures, BACKOFF_START, BACKOFF_MAX)


def _die_with_parent() -> None:
    os.setsid()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Supervisor:
    """Keeps one LocalProcess running until stop(); ``on_change`` is called when readiness flips."""

    def __init__(self, spec: LocalProcess, log_path: Path, on_change: Callable[[], None]):
        self.spec = spec
        self.log_path = log_path
        self.on_change = on_change
        self.ready = False
        self.pid: int | None = None
        self.restarts = 0
        self.exits_before_ready = 0
        self.last_exit: int | None = None
        self._stopping = False
        self._process: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"supervise {self.spec.name}")

    @property
    def crash_looping(self) -> bool:
        return not self.ready and self.exits_before_ready >= CRASH_LOOP_AFTER

    @property
    def message(self) -> str:
        """How often the process exited and was restarted, and why it is not up while it is not;
        "" when it never exited."""
        if self.last_exit is None:
            return ""
        if self.ready:
            return f"restarted {self.restarts} time(s), the last time after exit code {self.last_exit} (see `kaos logs`)"
        return f"process exited with code {self.last_exit}; restarted {self.restarts} time(s) (see `kaos logs`)"

    async def stop(self) -> None:
        self._stopping = True
        process = self._process
        if process is not None and process.returncode is None:
            kill_group(process.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except asyncio.TimeoutError:
                kill_group(process.pid, signal.SIGKILL)
                await process.wait()
        if process is not None:
            kill_group(process.pid, signal.SIGKILL)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._set_ready(False)

    def _set_ready(self, ready: bool) -> None:
        if ready:
            self.exits_before_ready = 0
        if ready != self.ready:
            self.ready = ready
            self.on_change()

    def _write_files(self) -> None:
        for path, content in self.spec.files:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)

    async def _run(self) -> None:
        failures = 0
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        while not self._stopping:
            self._write_files()
            with open(self.log_path, "ab") as log:
                log.write(f"--- {time.strftime('%H:%M:%S')} starting: {' '.join(self.spec.argv)}\n".encode())
                log.flush()
                try:
                    self._process = await asyncio.create_subprocess_exec(
                        *self.spec.argv,
                        env=self.spec.env_dict,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=log,
                        stderr=asyncio.subprocess.STDOUT,
                        preexec_fn=_die_with_parent,
                    )
                except OSError as error:
                    log.write(f"--- cannot start: {error}\n".encode())
                    self._process = None
            started = time.monotonic()
            if self._process is not None:
                self.pid = self._process.pid
                probe = asyncio.create_task(self._probe_readiness())
                code = await self._process.wait()
                probe.cancel()
                kill_group(self._process.pid, signal.SIGKILL)
                self.last_exit = code
            else:
                self.last_exit = -1
            self._set_ready(False)
            if self._stopping:
                return
            failures = 1 if time.monotonic() - started > BACKOFF_RESET_AFTER else failures + 1
            self.restarts += 1
            self.exits_before_ready += 1
            delay = restart_delay(failures)
            with open(self.log_path, "ab") as log:
                log.write(f"--- exited with code {self.last_exit}; restarting in {delay:.1f}s\n".encode())
            self.on_change()
            await asyncio.sleep(delay)

    async def _probe_readiness(self) -> None:
        """Fast until the first success, then every READY_PROBE_PERIOD; READY_FAILURE_THRESHOLD
        failures in a row make the process not ready until a probe succeeds again."""
        url = f"http://{LOOPBACK}:{self.spec.port}{self.spec.readiness_path or '/'}"
        failures = 0
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if await self._probe_once(client, url):
                    failures = 0
                    self._set_ready(True)
                else:
                    failures += 1
                    if self.ready and failures >= READY_FAILURE_THRESHOLD:
                        self._set_ready(False)
                await asyncio.sleep(READY_PROBE_PERIOD if self.ready else PROBE_INTERVAL)

    async def _probe_once(self, client: httpx.AsyncClient, url: str) -> bool:
        if self.spec.readiness_path is None:
            try:
                _, writer = await asyncio.open_connection(LOOPBACK, self.spec.port)
            except OSError:
                return False
            writer.close()
            return True
        try:
            response = await client.get(url)
        except httpx.HTTPError:
            return False
        return 200 <= response.status_code < 400
