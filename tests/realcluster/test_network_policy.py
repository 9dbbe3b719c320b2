"""NetworkPolicies enforced at the network (kube-router's firewall on the node): an agent's pod
reaches the peers its agentNetwork.access lists, and a peer outside that list refuses the
connection, even when the runtime is bypassed; cluster DNS answers for both, and the Gateway
reaches every agent."""

from __future__ import annotations

import json

import httpx

from tests.realcluster.manifests import agent, as_list, delegate, mock_modelapi
from tests.support.polling import wait_until

# Run in the caller's pod: resolve each peer's Service, then ask for its /health directly.
PROBE = """
import json, socket, sys, urllib.request
result = {}
for peer in sys.argv[2:]:
    host = f"agent-{peer}.{sys.argv[1]}.svc.cluster.local"
    entry = result[peer] = {"address": socket.gethostbyname(host)}
    try:
        entry["status"] = urllib.request.urlopen(f"http://{host}:8000/health", timeout=5).status
    except OSError as error:
        entry["error"] = repr(error)
print(json.dumps(result))
"""


def test_a_peer_outside_the_access_list_is_refused_at_the_network(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(
        mock_modelapi("llm", "unused"),
        agent("caller", "llm", access=["allowed"], replies=[delegate("allowed", "Count the sheep."), "Delegated."]),
        agent("allowed", "llm", replies=["42 sheep."]),
        agent("outsider", "llm")))
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), ("agent", "caller"), ("agent", "allowed"),
                                        ("agent", "outsider")])
    assert real_cluster.json("get", "networkpolicy", "agent-outsider", "-n", namespace)

    # The delegation the access list allows goes through, runtime to runtime.
    response = real_cluster.gateway_post(f"/{namespace}/agent/caller/v1/chat/completions",
                                         {"messages": [{"role": "user", "content": "How many sheep?"}]})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Delegated."
    events = httpx.get(f"{real_cluster.gateway_url}/{namespace}/agent/caller/memory/events",
                       params={"event_type": "delegation_response"}, timeout=30).json()["events"]
    assert any("42 sheep." in json.dumps(event["content"]) for event in events), events

    # Bypassing the runtime: from the caller's pod, DNS names both peers, only the listed one answers.
    probe = real_cluster.kubectl("exec", "deployment/agent-caller", "-n", namespace, "--",
                                 "python3", "-c", PROBE, namespace, "allowed", "outsider")
    result = json.loads(probe.stdout)
    assert result["allowed"].get("status") == 200, result
    assert result["outsider"]["address"] and "status" not in result["outsider"], result

    # The outsider serves: the Gateway (on the node's address) reaches it.
    def outsider_health() -> int | None:
        try:
            return httpx.get(f"{real_cluster.gateway_url}/{namespace}/agent/outsider/health", timeout=10).status_code
        except httpx.HTTPError:
            return None
    assert wait_until(lambda: outsider_health() == 200, timeout=60, interval=1, what="the outsider through the Gateway")
