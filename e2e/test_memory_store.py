"""MemoryStores end to end on `kaos up` (local backend), with real agents: NEEDS BOTH the resource
side (this branch: the kind, its status, the env, `kaos memory`'s client) AND the runtime's
long-term memory (kaos_runtime.long_term and the offline embedder
kaos_runtime.engines.embeddings_server, branch `ltm`). It is skipped until both are in the tree.

The embedder is the runtime's offline one, a process on 127.0.0.1 behind a Proxy ModelAPI; the
store is the embedded default (sqlite-vec under KAOS_HOME). A fact the model stores with its
`remember` tool in one session is listed, found by a search and recalled in a new session; it is
gone after forget; stopping the embedder makes the MemoryStore Degraded (MemoryDegraded names the
embedder) and the agent keeps answering."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import httpx
import pytest

from e2e.conftest import (
    BACKEND,
    ROOT,
    create_agent_resource,
    create_custom_resource,
    create_modelapi_resource,
    deploy_and_wait,
    gateway_url,
    get_custom_resource,
    wait_for_status,
)
from kaos.api import API_VERSION
from kaos.cli.memory import AgentMemory
from kaos.local.ports import free_port
from tests.support.polling import wait_until

NEEDS_RUNTIME = not (importlib.util.find_spec("kaos_runtime.long_term")
                     and importlib.util.find_spec("kaos_runtime.engines.embeddings_server"))
pytestmark = [
    pytest.mark.e2e, pytest.mark.dataplane,
    pytest.mark.skipif(NEEDS_RUNTIME, reason="needs the runtime's long-term memory (branch ltm) merged with this one"),
    pytest.mark.skipif(BACKEND != "local", reason="the offline embedder runs on 127.0.0.1 (the local backend)"),
]

FACT = "The user's favourite colour is green."


class Embedder:
    """The runtime's offline embedder as a process on 127.0.0.1 (started, stopped, started again)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kaos_runtime.engines.embeddings_server", "--host", "127.0.0.1",
             "--port", str(self.port)], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)

        def healthy() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(healthy, 120, what="the offline embedder")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
            self.process = None


@pytest.fixture(scope="module")
def embedder():
    server = Embedder()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def assistant(test_namespace, shared_modelapi, embedder) -> str:
    modelapi = create_modelapi_resource(test_namespace, "e2e-embedder", models=["minilm"],
                                        api_base=f"http://127.0.0.1:{embedder.port}")
    deploy_and_wait(modelapi, test_namespace)
    store = {"apiVersion": API_VERSION, "kind": "MemoryStore", "metadata": {"name": "facts", "namespace": test_namespace},
             "spec": {"models": {"embedding": {"modelAPI": "e2e-embedder", "model": "minilm"}}}}
    create_custom_resource(store, test_namespace)
    wait_for_status("MemoryStore", "facts", test_namespace, "Ready", timeout=120)
    agent = create_agent_resource(test_namespace, "assistant", shared_modelapi)
    agent["spec"]["memory"] = {"store": "facts"}
    deploy_and_wait(agent, test_namespace)
    return "assistant"


def chat(namespace: str, agent: str, text: str) -> httpx.Response:
    return httpx.post(gateway_url(namespace, "agent", agent) + "/v1/chat/completions",
                      json={"messages": [{"role": "user", "content": text}]}, timeout=120)


def test_the_store_is_ready_and_names_its_collection(assistant, test_namespace):
    status = get_custom_resource("MemoryStore", "facts", test_namespace)["status"]
    assert status["ready"] is True and status["collection"] == f"{test_namespace}-facts"
    assert {c["type"]: c["status"] for c in status["conditions"]}["MemoryDegraded"] == "False"


def test_a_remembered_fact_is_listed_found_and_forgotten(assistant, test_namespace, mock_model_server):
    mock_model_server.script([{"tool_calls": [{"name": "remember", "arguments": {"fact": FACT}}]}, "Noted."])
    answer = chat(test_namespace, assistant, "Remember: my favourite colour is green.")
    assert answer.status_code == 200, answer.text
    gateway = gateway_url(test_namespace, "agent", assistant).split(f"/{test_namespace}/")[0]
    memory = AgentMemory(gateway, test_namespace, assistant)
    try:
        listed = wait_until(lambda: [m for m in memory.list()["memories"] if m["text"] == FACT], 60,
                            what="the remembered fact in /memory/long-term")
        assert [m["text"] for m in memory.search("which colour does the user like")["memories"]][0] == FACT
        assert memory.forget(listed[0]["id"])["deleted"] == [listed[0]["id"]]
        assert all(m["text"] != FACT for m in memory.list()["memories"])
    finally:
        memory.close()


def test_the_embedder_stopped_degrades_the_store_and_the_agent_keeps_answering(assistant, test_namespace, embedder):
    embedder.stop()
    try:
        status = wait_until(lambda: (get_custom_resource("MemoryStore", "facts", test_namespace) or {}).get("status", {})
                            .get("phase") == "Degraded" and get_custom_resource("MemoryStore", "facts", test_namespace)["status"],
                            120, what="the MemoryStore Degraded")
        degraded = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
        assert degraded["status"] == "True" and degraded["message"].startswith("embedder: ")
        answer = chat(test_namespace, assistant, "Are you still there?")
        assert answer.status_code == 200, answer.text
    finally:
        embedder.start()
    wait_for_status("MemoryStore", "facts", test_namespace, "Ready", timeout=120)
