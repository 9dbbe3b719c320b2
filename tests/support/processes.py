"""Start real processes on free loopback ports, wait (bounded) until they answer, stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

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
        stop_process(self.process, grace=5)


def stop_process(process: subprocess.Popen, grace: float = 10, stop_signal: int = signal.SIGTERM) -> None:
    """End ``process`` if it still runs: ``stop_signal``, then SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_serving(process: subprocess.Popen, check: Callable[[], object], timeout: float, what: str,
                 log: Callable[[], str] = lambda: "", interval: float = 0.05,
                 not_yet: tuple[type[BaseException], ...] = (OSError, httpx.HTTPError)) -> None:
    """Poll ``check`` (bounded) until it returns something true; a ``check`` that raises one of
    ``not_yet`` (nothing listens yet) counts as false. When ``process`` exits first, fail at once
    with its exit code and ``log()``. ``what`` names the process in both failures."""

    def serving() -> object:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{log()}")
        try:
            return check()
        except not_yet:
            return False

    wait_until(serving, timeout, interval, what=f"{what} answering")


def alive(pid: int) -> bool:
    """Whether a process of that id still exists (a zombie not yet waited for counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port`` (raises OSError if not)."""
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


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
    try:
        wait_serving(service.process, lambda: httpx.get(service.url + path, timeout=1.0).status_code == 200,
                     timeout, service.name, service.log)
    except AssertionError:
        service.stop()
        raise TimeoutError(f"{service.name} did not answer 200 on {path} within {timeout}s:\n{service.log()}") from None


def wait_for_exit(service: Service, timeout: float = 30.0) -> int:
    try:
        return service.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        service.stop()
        raise


def kubectl_port_forward(namespace: str, service: str, local_port: int, remote_port: int,
                         kubeconfig: str | None = None) -> subprocess.Popen:
    """``kubectl port-forward`` from ``127.0.0.1:local_port`` to a Service's ``remote_port``, once it
    listens (the kubeconfig: ``kubeconfig``, else kubectl's own); stop it with ``stop_process``.
    Its output is not kept: a pipe nobody reads would stall it once full."""
    config = ["--kubeconfig", kubeconfig] if kubeconfig else []
    process = subprocess.Popen(["kubectl", *config, "port-forward", "--address", "127.0.0.1", "-n", namespace,
                                f"svc/{service}", f"{local_port}:{remote_port}"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_serving(process, lambda: listening(local_port), 30,
                 f"kubectl port-forward on {local_port} to {namespace}/{service}:{remote_port}")
    return process

