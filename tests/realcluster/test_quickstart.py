"""examples/quickstart/ in the real cluster: the operator (a pod under its ServiceAccount) runs
every resource as real pods, and the coordinator answers through the Gateway. The quickstart's
model falls back to its offline mock (nothing leaves the cluster's network namespace)."""

from __future__ import annotations

import httpx

from tests.realcluster.conftest import ROOT, RealCluster
from tests.support.polling import wait_until

RESOURCES = [("modelapi", "llm"), ("mcpserver", "tools"), ("agent", "worker"), ("agent", "coordinator")]


def phases(cluster: RealCluster, namespace: str) -> dict[str, str]:
    return {f"{kind}/{name}": (cluster.json("get", kind, name, "-n", namespace).get("status") or {}).get("phase", "")
            for kind, name in RESOURCES}


def test_the_quickstart_becomes_ready_and_answers_through_the_gateway(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", str(ROOT / "examples" / "quickstart"))

    def all_ready() -> bool:
        return set(phases(real_cluster, namespace).values()) == {"Ready"}

    try:
        wait_until(all_ready, timeout=240, interval=1, what="the quickstart's four resources Ready")
    except AssertionError:
        pods = real_cluster.kubectl("get", "pods", "-n", namespace, check=False).stdout
        raise AssertionError(f"{phases(real_cluster, namespace)}\n{pods}") from None

    url = f"{real_cluster.gateway_url}/{namespace}/agent/coordinator/v1/chat/completions"
    response = wait_until(lambda: _answer(url), timeout=60, interval=1, what="an answer through the Gateway")
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"]


def _answer(url: str) -> httpx.Response | None:
    try:
        response = httpx.post(url, json={"messages": [{"role": "user", "content": "Say hello."}]}, timeout=120)
    except httpx.HTTPError:
        return None
    # 404 until Traefik has the route, 502/503 until it has the endpoints.
    return response if response.status_code != 404 and response.status_code < 500 else None
