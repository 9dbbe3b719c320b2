"""Start real processes on free loopback ports and wait (bounded) until they answer."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

import httpx

from kaos.local.ports import free_port
from tests.support.polling import wait_until


@dataclass
class Service:
    """A started process and the base URL it listens on."""

    name: str
    process: subprocess.Popen
    url: str
    log_path: str
    env: dict = field(default_factory=dict)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def spawn(name: str, args: list[str], env: dict, log_dir: str, port: int | None = None) -> Service:
    """Run `python <args>` with HOST=127.0.0.1 and a free PORT, output to a log file."""
    port = port or free_port()
    full_env = {**os.environ, "HOST": "127.0.0.1", "PORT": str(port), **{key: str(value) for key, value in env.items()}}
    log_path = os.path.join(log_dir, f"{name}-{port}.log")
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, *args], env=full_env, stdout=log, stderr=subprocess.STDOUT)
    return Service(name=name, process=process, url=f"http://127.0.0.1:{port}", log_path=log_path, env=env)


def wait_until_ok(service: Service, path: str = "/health", timeout: float = 30.0) -> None:
    """Poll `path` until it answers 200; fail with the process log if it exits or times out."""

    def answers() -> bool:
        if service.process.poll() is not None:
            raise RuntimeError(f"{service.name} exited with {service.process.returncode}:\n{service.log()}")
        try:
            return httpx.get(service.url + path, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(answers, timeout, what=f"{service.name} answering 200 on {path}")
    except AssertionError:
        service.stop()
        raise TimeoutError(f"{service.name} did not answer 200 on {path} within {timeout}s:\n{service.log()}") from None


def wait_for_exit(service: Service, timeout: float = 30.0) -> int:
    try:
        return service.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        service.stop()
        raise
