"""What the benchmarks start on 127.0.0.1: the mock model server, agents and other processes, their
logs in one temp folder, all stopped (last first) when the benchmark's ``with Services(...)`` block
ends."""

from __future__ import annotations

import os
import tempfile

from tests.support.processes import Service, spawn, wait_until_ok

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "ollama/smollm2:135m"


def start_agent(name: str, env: dict, log_dir: str) -> Service:
    service = spawn(name, ["-m", "kaos_runtime", "agent"], {"AGENT_NAME": name, "MODEL_NAME": MODEL,
                                                            "AGENT_LOG_LEVEL": "WARNING", **env}, log_dir)
    wait_until_ok(service, "/ready", timeout=120)  # an older runtime imports litellm first: seconds, more under load
    return service


class Services:
    """The block runs in the checkout's root; ``log_dir``, a new temp folder named ``prefix``..."""

    def __init__(self, prefix: str) -> None:
        self.log_dir = tempfile.mkdtemp(prefix=prefix)
        self.started: list = []

    def __enter__(self) -> Services:
        os.chdir(ROOT)
        return self

    def __exit__(self, *exc) -> None:
        for service in reversed(self.started):
            service.stop()

    def add(self, service):
        """``service`` (anything with a stop()), stopped with the others; returned."""
        self.started.append(service)
        return service

    def spawn(self, name: str, args: list[str], env: dict) -> Service:
        """``python <args>`` with HOST and PORT, once it answers 200 on /health."""
        service = self.add(spawn(name, args, env, self.log_dir))
        wait_until_ok(service)
        return service

    def mock_model(self) -> Service:
        return self.spawn("mock-model", ["-m", "tests.support.mock_model"], {})

    def agent(self, name: str, env: dict) -> Service:
        """An agent of this checkout's runtime (``start_agent``), once /ready answers."""
        return self.add(start_agent(name, env, self.log_dir))
