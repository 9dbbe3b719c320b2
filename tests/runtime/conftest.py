"""Fixtures: a mock model server, agents and MCP servers as real processes on 127.0.0.1."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.hydra import running_hydra
from tests.support.processes import Service, spawn, wait_until_ok


class MockModel:
    """Steers the mock model server over its control endpoints."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.url = service.url

    def script(self, *replies) -> None:
        httpx.post(self.url + "/_mock/script", json={"replies": list(replies)}).raise_for_status()

    def requests(self) -> list[dict]:
        return httpx.get(self.url + "/_mock/requests").json()["requests"]

    def reset(self) -> None:
        httpx.delete(self.url + "/_mock/requests").raise_for_status()

    def streams(self) -> list[dict]:
        """Every streamed (or gated) reply: pieces sent, completed, disconnected."""
        return httpx.get(self.url + "/_mock/streams").json()["streams"]

    def release(self, gate: str) -> None:
        httpx.post(self.url + "/_mock/release", json={"gate": gate}).raise_for_status()


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("runtime-logs"))


@pytest.fixture(scope="module")
def mock_model(log_dir):
    service = spawn("mock-model", ["-m", "tests.support.mock_model"], {}, log_dir)
    wait_until_ok(service)
    yield MockModel(service)
    service.stop()


@pytest.fixture
def clean_model(mock_model):
    """The mock model as new for each test: no requests, script, streams or gates left from an
    earlier one (a module asks for it with ``pytestmark = pytest.mark.usefixtures("clean_model")``)."""
    mock_model.reset()


@pytest.fixture(scope="module")
def start(log_dir):
    """start(kind, name, env, ready=True, port=None) -> Service; everything started is stopped at module end."""
    started: list[Service] = []

    def _start(kind: str, name: str, env: dict, ready: bool = True, port: int | None = None) -> Service:
        service = spawn(name, ["-m", "kaos_runtime", kind], env, log_dir, port=port)
        started.append(service)
        if ready:
            wait_until_ok(service, "/ready" if kind == "agent" else "/health", timeout=90)  # /ready: litellm loaded
        return service

    yield _start
    for service in reversed(started):
        service.stop()


@pytest.fixture(scope="module")
def approval_tools(start):
    """A python-string MCP server with delete_file and read_file (tests/runtime/approval_support.py)."""
    from .approval_support import TOOLS

    return start("mcp", "approval-tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.fixture
def background():
    """Threads for requests that wait (for an approval) while the test goes on."""
    with ThreadPoolExecutor(4) as pool:
        yield pool


def agent_env(name: str, model: MockModel | None = None, **extra) -> dict:
    env = {"AGENT_NAME": name, "AGENT_LOG_LEVEL": "INFO", "MODEL_NAME": "ollama/smollm2:135m"}
    if model is not None:
        env["MODEL_API_URL"] = model.url
    for key, value in extra.items():
        env[key] = json.dumps(value) if key == "DEBUG_MOCK_RESPONSES" else str(value)
    return env


def chat(agent: Service, text: str, **kwargs) -> httpx.Response:
    headers = kwargs.pop("headers", None)
    body = {"model": "x", "messages": [{"role": "user", "content": text}], **kwargs}
    return httpx.post(agent.url + "/v1/chat/completions", json=body, headers=headers, timeout=60)


def events(agent: Service, **params) -> dict:
    response = httpx.get(agent.url + "/memory/events", params=params, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def hydra(tmp_path_factory):
    """A real OpenID Connect issuer (Ory Hydra, tests/support/hydra.py) for one test module."""
    with running_hydra(tmp_path_factory.mktemp("hydra")) as issuer:
        yield issuer
