"""examples/quickstart/ in the real cluster: the operator (a pod under its ServiceAccount) runs
every resource as real pods, and the coordinator answers through the Gateway. The quickstart's
model falls back to its offline mock (nothing leaves the cluster's network namespace)."""

from __future__ import annotations

from tests.realcluster.conftest import ROOT

RESOURCES = [("modelapi", "llm"), ("mcpserver", "tools"), ("agent", "worker"), ("agent", "coordinator")]


def test_the_quickstart_becomes_ready_and_answers_through_the_gateway(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "quickstart"))
    real_cluster.wait_ready(namespace, RESOURCES)

    response = real_cluster.gateway_post(f"/{namespace}/agent/coordinator/v1/chat/completions",
                                         {"messages": [{"role": "user", "content": "Say hello."}]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"]
