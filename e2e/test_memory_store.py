"""MemoryStores end to end with real agents, on `kaos up` (local backend) and in a cluster
(KAOS_E2E_BACKEND=cluster, the real-cluster tier).

The embedder is the runtime's offline one (all-MiniLM-L6-v2, kaos_runtime.engines.embeddings_server).
In a cluster it is a Hosted ModelAPI on the embeddings engine (a pod of the embeddings image) and
the store is the platform's PostgreSQL with pgvector (memory.postgres.deploy; a StatefulSet in
kaos-system); on `kaos up` the Hosted engine runs as a local process, and the store is the
embedded default (sqlite-vec under KAOS_HOME) with the embedder a hand-started process behind a
Proxy ModelAPI, which the Degraded test stops.

Two users, two API keys of the agent (principals key:1 and key:2, scope user): a fact one tells
the agent in one session (its `remember` tool) is recalled in a new session for the same user,
never for the other; it is listed, found by a search and gone after forget. The store (cluster)
or the embedder (local) stopped makes the MemoryStore Degraded and the agent keeps answering.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import secrets
import subprocess
import sys
import uuid

import httpx
import pytest

from e2e.conftest import (
    BACKEND,
    ROOT,
    create_agent_resource,
    create_custom_resource,
    create_modelapi_resource,
    deploy_and_wait,
    fenced,
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
    pytest.mark.skipif(NEEDS_RUNTIME, reason="needs the runtime's long-term memory (kaos_runtime.long_term)"),
]

LOCAL = BACKEND == "local"
FACT = "The user's favourite colour is green."
ALICE_KEY, BOB_KEY = f"alice-{secrets.token_hex(12)}", f"bob-{secrets.token_hex(12)}"
# The platform's PostgreSQL in a cluster (the platform chart's memory.postgres, release kaos).
PLATFORM_NAMESPACE = "kaos-system"
POSTGRES = "statefulset/kaos-memory-postgres"


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
def hosted_embedder(test_namespace) -> str:
    """A Hosted ModelAPI on the embeddings engine: `kaos-runtime embeddings` in a pod, or a local
    process under `kaos up`."""
    resource = {"apiVersion": API_VERSION, "kind": "ModelAPI",
                "metadata": {"name": "hosted-embedder", "namespace": test_namespace},
                "spec": {"mode": "Hosted", "hostedConfig": {"engine": "embeddings", "model": "minilm"}}}
    deploy_and_wait(resource, test_namespace, timeout=240)
    wait_for_status("ModelAPI", "hosted-embedder", test_namespace, "Ready", timeout=120)
    return "hosted-embedder"


@pytest.fixture(scope="module")
def embedding_modelapi(test_namespace, request) -> str:
    """The store's embedder: the Hosted one in a cluster; locally a Proxy over a hand-started
    process (which the Degraded test stops)."""
    if not LOCAL:
        return request.getfixturevalue("hosted_embedder")
    server = request.getfixturevalue("embedder")
    deploy_and_wait(create_modelapi_resource(test_namespace, "e2e-embedder", models=["minilm"],
                                             api_base=f"http://127.0.0.1:{server.port}"), test_namespace)
    return "e2e-embedder"


def remembers_then_answers() -> list[str]:
    """The agent's scripted model (DEBUG_MOCK_RESPONSES, the same on both backends): the first
    turn calls `remember` with the fact, then answers; later turns answer."""
    return [fenced("tool_call", {"tool": "remember", "arguments": {"fact": FACT}}), "Noted."] + ["Hello."] * 40


@pytest.fixture(scope="module")
def assistant(test_namespace, shared_modelapi, embedding_modelapi) -> str:
    keys = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "assistant-keys", "namespace": test_namespace},
            "data": {"accepted": base64.b64encode(f"{ALICE_KEY},{BOB_KEY}".encode()).decode()}}
    create_custom_resource(keys, test_namespace)
    store = {"apiVersion": API_VERSION, "kind": "MemoryStore", "metadata": {"name": "facts", "namespace": test_namespace},
             "spec": {"models": {"embedding": {"modelAPI": embedding_modelapi, "model": "minilm"}}}}
    create_custom_resource(store, test_namespace)
    wait_for_status("MemoryStore", "facts", test_namespace, "Ready", timeout=180)
    agent = create_agent_resource(test_namespace, "assistant", shared_modelapi, mock_responses=remembers_then_answers())
    agent["spec"]["memory"] = {"store": "facts"}
    agent["spec"]["auth"] = {"apiKeys": {"secretKeyRef": {"name": "assistant-keys", "key": "accepted"}}}
    create_custom_resource(agent, test_namespace)
    wait_until(lambda: _answers(test_namespace), 240, what="the assistant answering through the gateway")
    return "assistant"


def _answers(namespace: str) -> bool:
    try:
        return httpx.get(gateway_url(namespace, "agent", "assistant") + "/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def chat(namespace: str, agent: str, text: str, key: str, session: str) -> httpx.Response:
    return httpx.post(gateway_url(namespace, "agent", agent) + "/v1/chat/completions",
                      json={"messages": [{"role": "user", "content": text}], "session_id": session},
                      headers={"Authorization": f"Bearer {key}"}, timeout=120)


def recalled(namespace: str, key: str, session: str) -> list[str]:
    """The memories the agent put before the model in this session (its memory_recalled events)."""
    response = httpx.get(gateway_url(namespace, "agent", "assistant") + "/memory/events",
                         params={"session_id": session, "event_type": "memory_recalled", "limit": 100},
                         headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return [memory["text"] for event in response.json()["events"]
            for memory in (event.get("content") or {}).get("memories") or []]


def memory_of(namespace: str, key: str) -> AgentMemory:
    gateway = gateway_url(namespace, "agent", "assistant").split(f"/{namespace}/")[0]
    return AgentMemory(gateway, namespace, "assistant", token=key)


def test_a_hosted_embeddings_modelapi_serves_embeddings(hosted_embedder, test_namespace):
    response = httpx.post(gateway_url(test_namespace, "modelapi", hosted_embedder) + "/v1/embeddings",
                          json={"model": "minilm", "input": ["green is my colour", "the sky is blue"]}, timeout=60)
    assert response.status_code == 200, response.text
    vectors = [item["embedding"] for item in response.json()["data"]]
    assert len(vectors) == 2 and {len(vector) for vector in vectors} == {384}


def test_the_store_is_ready_and_names_its_collection(assistant, test_namespace):
    status = get_custom_resource("MemoryStore", "facts", test_namespace)["status"]
    assert status["ready"] is True and status["collection"] == f"{test_namespace}-facts"
    assert {c["type"]: c["status"] for c in status["conditions"]}["MemoryDegraded"] == "False"
    if not LOCAL:  # storage local in a cluster: the platform's PostgreSQL, not a file in the pod
        deployment = json.loads(_kubectl("get", "deployment", "agent-assistant", "-n", test_namespace, "-o", "json"))
        env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["LONG_TERM_MEMORY_STORE_URL"].startswith("postgresql://kaos:")
        assert f"@kaos-memory-postgres.{PLATFORM_NAMESPACE}.svc" in env["LONG_TERM_MEMORY_STORE_URL"]


def in_postgres(namespace: str) -> list[str]:
    """The texts of the store's table in the platform's PostgreSQL (psql in its pod)."""
    from kaos_runtime.long_term.records import table_name

    query = f'select text from "{table_name(f"{namespace}-facts")}"'
    return _kubectl("-n", PLATFORM_NAMESPACE, "exec", "kaos-memory-postgres-0", "--", "sh", "-c",
                    f"$(echo /opt/kaos/lib/python3*/site-packages/pgserver/pginstall/bin)/psql -h /tmp -U kaos "
                    f"-d kaos -tA -c '{query}'").splitlines()


def test_a_fact_is_recalled_for_its_user_only_and_gone_after_forget(assistant, test_namespace):
    told = chat(test_namespace, assistant, "Remember: my favourite colour is green.", ALICE_KEY, f"told-{uuid.uuid4().hex}")
    assert told.status_code == 200, told.text
    alice, bob = memory_of(test_namespace, ALICE_KEY), memory_of(test_namespace, BOB_KEY)
    try:
        listed = wait_until(lambda: [m for m in alice.list()["memories"] if m["text"] == FACT], 60,
                            what="the remembered fact in alice's /memory/long-term")
        assert [m["text"] for m in alice.search("which colour does the user like")["memories"]][0] == FACT
        if not LOCAL:
            assert FACT in in_postgres(test_namespace)
        assert all(m["text"] != FACT for m in bob.list()["memories"] + bob.search("favourite colour")["memories"])

        later = f"later-{uuid.uuid4().hex}"  # a new session of the same user
        assert chat(test_namespace, assistant, "What is my favourite colour?", ALICE_KEY, later).status_code == 200
        assert FACT in recalled(test_namespace, ALICE_KEY, later)
        other = f"other-{uuid.uuid4().hex}"  # another user asks the same
        assert chat(test_namespace, assistant, "What is my favourite colour?", BOB_KEY, other).status_code == 200
        assert FACT not in recalled(test_namespace, BOB_KEY, other)

        # One forgotten, then the rest (the turn's own extraction kept "my favourite colour is green.")
        assert alice.forget(listed[0]["id"])["deleted"] == [listed[0]["id"]]
        assert all(m["text"] != FACT for m in alice.list()["memories"] + alice.search("favourite colour")["memories"])
        alice.forget(None)
        assert alice.list()["memories"] == [] and alice.search("favourite colour")["memories"] == []
        if not LOCAL:
            assert FACT not in in_postgres(test_namespace)
        after = f"after-{uuid.uuid4().hex}"
        assert chat(test_namespace, assistant, "What is my favourite colour?", ALICE_KEY, after).status_code == 200
        assert recalled(test_namespace, ALICE_KEY, after) == []
    finally:
        alice.close()
        bob.close()


def _degraded(namespace: str):
    status = (get_custom_resource("MemoryStore", "facts", namespace) or {}).get("status") or {}
    return status if status.get("phase") == "Degraded" else None


def _still_answers(namespace: str) -> None:
    answer = chat(namespace, "assistant", "Are you still there?", ALICE_KEY, f"degraded-{uuid.uuid4().hex}")
    assert answer.status_code == 200, answer.text


@pytest.mark.skipif(not LOCAL, reason="in a cluster the embedder is a Hosted ModelAPI; the store is stopped instead")
def test_the_embedder_stopped_degrades_the_store_and_the_agent_keeps_answering(assistant, test_namespace, embedder):
    embedder.stop()
    try:
        status = wait_until(lambda: _degraded(test_namespace), 120, what="the MemoryStore Degraded")
        degraded = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
        assert degraded["status"] == "True" and degraded["message"].startswith("embedder: ")
        _still_answers(test_namespace)
    finally:
        embedder.start()
    wait_for_status("MemoryStore", "facts", test_namespace, "Ready", timeout=120)


def _kubectl(*args: str) -> str:
    result = subprocess.run(["kubectl", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.skipif(LOCAL, reason="the platform's PostgreSQL runs in a cluster (memory.postgres.deploy)")
def test_the_store_stopped_degrades_the_store_and_the_agent_keeps_answering(assistant, test_namespace):
    _kubectl("-n", PLATFORM_NAMESPACE, "scale", POSTGRES, "--replicas=0")
    try:
        _kubectl("-n", PLATFORM_NAMESPACE, "wait", "--for=delete", "pod/kaos-memory-postgres-0", "--timeout=90s")
        status = wait_until(lambda: _degraded(test_namespace), 120, what="the MemoryStore Degraded")
        degraded = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
        assert degraded["status"] == "True" and degraded["message"].startswith("store: "), degraded
        _still_answers(test_namespace)
    finally:
        _kubectl("-n", PLATFORM_NAMESPACE, "scale", POSTGRES, "--replicas=1")
        _kubectl("-n", PLATFORM_NAMESPACE, "rollout", "status", POSTGRES, "--timeout=120s")
    wait_for_status("MemoryStore", "facts", test_namespace, "Ready", timeout=120)
    assert json.loads(_kubectl("get", "memorystore", "facts", "-n", test_namespace, "-o", "json"))["status"]["ready"]
