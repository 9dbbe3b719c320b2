"""What a node and a platform go through, with real pods: an agent's pod deleted between two
turns of a conversation (memory on the platform's Redis), and containerd restarted on the node."""

from __future__ import annotations

import subprocess
import uuid

import httpx

from tests.realcluster.conftest import ROOT, RealCluster
from tests.realcluster.manifests import agent, as_list, mock_modelapi
from tests.support.polling import wait_until


def chat(cluster: RealCluster, namespace: str, name: str, text: str, session: str) -> str:
    response = cluster.gateway_post(f"/{namespace}/agent/{name}/v1/chat/completions",
                                    {"messages": [{"role": "user", "content": text}], "session_id": session},
                                    timeout=120)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def user_messages(cluster: RealCluster, namespace: str, name: str, session: str) -> list[str]:
    events = httpx.get(f"{cluster.gateway_url}/{namespace}/agent/{name}/memory/events",
                       params={"session_id": session, "event_type": "user_message"}, timeout=30).json()["events"]
    return [event["content"] for event in events]


def pod_of(cluster: RealCluster, namespace: str, name: str) -> str:
    pods = cluster.json("get", "pods", "-n", namespace, "-l", f"app.kubernetes.io/instance=agent-{name}")["items"]
    live = [pod["metadata"]["name"] for pod in pods if not pod["metadata"].get("deletionTimestamp")]
    assert len(live) == 1, [pod["metadata"]["name"] for pod in pods]
    return live[0]


def test_an_agents_pod_deleted_mid_conversation_loses_no_session_on_redis(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(
        mock_modelapi("llm", "Noted."), agent("keeper", "llm", memory="redis")))
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), ("agent", "keeper")])
    session = f"rc-{uuid.uuid4().hex[:8]}"
    assert chat(real_cluster, namespace, "keeper", "My number is 7.", session) == "Noted."
    first = pod_of(real_cluster, namespace, "keeper")

    real_cluster.kubectl("delete", "pod", first, "-n", namespace, "--wait=true")
    wait_until(lambda: pod_of(real_cluster, namespace, "keeper") != first, timeout=60, what="a new pod")
    real_cluster.kubectl("rollout", "status", "deployment/agent-keeper", "-n", namespace, "--timeout=120s")

    assert chat(real_cluster, namespace, "keeper", "What was my number?", session) == "Noted."
    assert user_messages(real_cluster, namespace, "keeper", session) == ["My number is 7.", "What was my number?"]
    sessions = httpx.get(f"{real_cluster.gateway_url}/{namespace}/agent/keeper/memory/sessions", timeout=30).json()
    assert session in sessions["sessions"]


def test_a_restart_of_containerd_leaves_the_agents_serving(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(
        mock_modelapi("llm", "Still here."), agent("steady", "llm")))
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), ("agent", "steady")])
    before = pod_of(real_cluster, namespace, "steady")
    assert chat(real_cluster, namespace, "steady", "Are you there?", "before") == "Still here."

    restart = subprocess.run([str(ROOT / "scripts" / "cluster"), "restart", "containerd"],
                             capture_output=True, text=True, timeout=120)
    assert restart.returncode == 0, restart.stderr

    # The same pod serves on (containers outlive containerd), and the node runs new pods, logs and exec.
    assert chat(real_cluster, namespace, "steady", "Still there?", "after") == "Still here."
    assert pod_of(real_cluster, namespace, "steady") == before
    real_cluster.kubectl("delete", "pod", before, "-n", namespace, "--wait=true")
    real_cluster.kubectl("rollout", "status", "deployment/agent-steady", "-n", namespace, "--timeout=120s")
    after = pod_of(real_cluster, namespace, "steady")
    assert chat(real_cluster, namespace, "steady", "And now?", "new-pod") == "Still here."
    assert real_cluster.kubectl("exec", f"pod/{after}", "-n", namespace, "--", "id", "-u").stdout.strip() == "10001"
    assert real_cluster.kubectl("logs", f"pod/{after}", "-n", namespace).stdout
