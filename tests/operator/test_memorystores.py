"""The operator writes a MemoryStore's status (kmock as the API server): a store at a closed
port is Degraded with MemoryDegraded naming it; an Agent naming the store is deployed with its
longTermMemory values (the URL from the Secret key, never its value); a missing store holds the
Agent Waiting with a message."""

import base64
import socket

from tests.operator.conftest import NAMESPACE as NS
from tests.support.polling import eventually


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def store_spec(storage: dict) -> dict:
    return {"storage": storage, "models": {"embedding": {"modelAPI": "embedder", "model": "bge-small"}}}


async def test_a_store_at_a_closed_port_is_degraded_and_its_agent_deployed(operator):
    cluster, helm = operator.cluster, operator.helm
    port = closed_port()
    await cluster.create("ModelAPI", "embedder", {"mode": "Proxy", "proxyConfig": {"models": ["bge-small", "m"]}})
    await cluster.create("Agent", "coord", {"modelAPI": "embedder", "model": "m", "memory": {"store": "facts"}})
    await eventually(lambda: "MemoryStore facts (not found)" in cluster.status("Agent", "coord").get("message", ""), 60)
    assert cluster.status("Agent", "coord")["phase"] == "Waiting"

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pg", "namespace": NS},
              "data": {"url": base64.b64encode(f"postgresql://kaos:pw@127.0.0.1:{port}/kaos".encode()).decode()}}
    response = await cluster.kmock.post(f"/api/v1/namespaces/{NS}/secrets", json=secret)
    assert response.status < 300, await response.text()
    await cluster.create("MemoryStore", "facts", store_spec(
        {"type": "external", "external": {"connectionSecretRef": {"name": "pg", "key": "url"}}}))
    status = await eventually(lambda: cluster.status("MemoryStore", "facts").get("phase") == "Degraded"
                              and cluster.status("MemoryStore", "facts"), 60)
    degraded = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
    assert degraded["status"] == "True" and degraded["lastTransitionTime"]
    assert degraded["message"].startswith(f"store: cannot connect to PostgreSQL at 127.0.0.1:{port}")
    assert "pw" not in str(status), "the Secret's URL is never written into status"
    assert status["embedding"] == {"url": f"http://modelapi-embedder.{NS}.svc.cluster.local:8000", "model": "bge-small"}

    await eventually(lambda: helm.applied("agent-coord"), 60)
    memory = helm.applied("agent-coord")[-1].values["longTermMemory"]
    assert (memory["url"], memory["urlSecretKeyRef"]) == ("", {"name": "pg", "key": "url"})
    assert memory["collection"] == f"{NS}-facts"
    deployment = next(o for o in helm.applied("agent-coord")[-1].objects if o["kind"] == "Deployment")
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["LONG_TERM_MEMORY_STORE_URL"]["valueFrom"] == {"secretKeyRef": {"name": "pg", "key": "url"}}
    assert env["LONG_TERM_MEMORY_ENABLED"]["value"] == "true"


async def test_a_store_without_its_modelapi_waits(operator):
    cluster = operator.cluster
    await cluster.create("MemoryStore", "facts", store_spec({"type": "local"}))
    await eventually(lambda: cluster.status("MemoryStore", "facts").get("phase") == "Waiting", 60)
    assert "ModelAPI embedder (not found)" in cluster.status("MemoryStore", "facts")["message"]
