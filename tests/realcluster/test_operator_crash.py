"""The operator's pod crashes (its container killed on the node) while it upgrades releases in a
rollout: the restarted operator finishes the rollout, and every resource keeps exactly one
release, deployed, none left pending (helm refuses to upgrade a pending release)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.realcluster.conftest import ROOT, RealCluster
from tests.realcluster.manifests import agent, as_list, mock_modelapi
from tests.support.polling import wait_until

AGENTS = [f"a{i}" for i in range(6)]
PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
# Six agents Ready, up to three waves, and the takeover of a pending release (60 s old, at a retry).
pytestmark = pytest.mark.timeout(900)


def helm_releases(cluster: RealCluster, namespace: str) -> dict[str, dict]:
    listed = subprocess.run([str(ROOT / ".tools" / "bin" / "helm"), "list", "-n", namespace, "-o", "json"],
                            capture_output=True, text=True, timeout=60, env={**os.environ, "KUBECONFIG": cluster.kubeconfig})
    assert listed.returncode == 0, listed.stderr
    return {release["name"]: release for release in json.loads(listed.stdout)}


def pending(cluster: RealCluster, namespace: str) -> list[str]:
    """The releases whose last revision is pending, from helm's storage Secrets (one per revision;
    a rollback leaves the interrupted revision in the history as it was)."""
    last: dict[str, tuple[int, str]] = {}
    for secret in cluster.json("get", "secrets", "-n", namespace, "-l", "owner=helm")["items"]:
        labels = secret["metadata"]["labels"]
        revision = (int(labels["version"]), labels["status"])
        last[labels["name"]] = max(last.get(labels["name"], revision), revision)
    return sorted(name for name, (_, status) in last.items() if status in PENDING)


def operator_pid(cluster: RealCluster) -> int:
    """The host's pid of the operator container's first process, from the node's containerd
    (found ahead, so that the kill is one system call when a release turns pending: an upgrade's
    window is a fraction of a second, shorter than starting ctr on a loaded machine). The node
    shares the host's pid namespace; the container's own ends with its first process."""
    pod = cluster.json("get", "pods", "-n", "kaos-system", "-l", "app.kubernetes.io/component=operator")["items"][0]
    container = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
    listed = subprocess.run([str(cluster.state / "bin" / "ctr"), "--address",
                             str(cluster.state / "containerd" / "containerd.sock"), "-n", "k8s.io", "tasks", "ls"],
                            check=True, capture_output=True, text=True, timeout=30).stdout
    (pid,) = [int(fields[1]) for fields in map(str.split, listed.splitlines()) if fields and fields[0] == container]
    return pid


def kill_when_pending(cluster: RealCluster, namespace: str, pid: int, timeout: float = 60) -> None:
    """Polls helm's storage Secrets every few milliseconds; kills the operator at the first
    pending revision."""
    path = f"/api/v1/namespaces/{namespace}/secrets"
    selector = f"owner=helm,status in ({','.join(PENDING)})"
    with cluster.api() as api:
        def seen() -> bool:
            return bool(api.get(path, params={"labelSelector": selector}).json()["items"])
        wait_until(seen, timeout=timeout, interval=0.005, what="a release pending")
    os.kill(pid, signal.SIGKILL)


def operator_ready(cluster: RealCluster) -> bool:
    """The operator's container runs and is ready (after a crash, the kubelet restarts it with a backoff)."""
    pods = cluster.json("get", "pods", "-n", "kaos-system", "-l", "app.kubernetes.io/component=operator")["items"]
    return any(all(c.get("ready") for c in pod["status"].get("containerStatuses") or [{}]) for pod in pods)


def rolled_out(cluster: RealCluster, namespace: str, name: str, wave: str) -> bool:
    deployment = cluster.json("get", "deployment", f"agent-{name}", "-n", namespace)
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    return env.get("ROLLOUT_WAVE") == wave


def with_wave(name: str, wave: str) -> dict:
    resource = agent(name, "llm")
    resource["spec"]["config"]["env"] = [{"name": "ROLLOUT_WAVE", "value": wave}]
    return resource


def test_the_operator_killed_during_a_rollout_resumes_without_a_duplicate_release(real_cluster, namespace):
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(
        mock_modelapi("llm", "Hi."), *(with_wave(name, "0") for name in AGENTS)))
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), *(("agent", name) for name in AGENTS)])

    caught = None
    for wave in ("1", "2", "3"):  # until a kill lands while helm has a release pending
        wait_until(lambda: operator_ready(real_cluster), timeout=300, interval=1, what="the operator ready")
        pid = operator_pid(real_cluster)
        real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(*(with_wave(n, wave) for n in AGENTS)))
        kill_when_pending(real_cluster, namespace, pid)
        caught = pending(real_cluster, namespace)
        if caught:
            break
        wait_until(lambda: all(rolled_out(real_cluster, namespace, n, wave) for n in AGENTS), timeout=300,
                   interval=1, what=f"wave {wave} rolled out")
    assert caught, "no kill landed while a release was pending"

    wait_until(lambda: all(rolled_out(real_cluster, namespace, n, wave) for n in AGENTS), timeout=400, interval=2,
               what=f"wave {wave} rolled out after the operator's crash (left pending: {caught})")
    # A pending revision is taken over once KAOS_HELM_STALE_SECONDS (60) old, at a retry (backoff
    # 5, 10, 20, 40 s...): a rollback, then the upgrade (pending for a moment in its turn).
    expected = sorted([f"agent-{n}" for n in AGENTS] + ["modelapi-llm"])

    def all_deployed() -> dict[str, str]:
        """helm list shows a release's last deployed revision while a newer one is pending (the
        takeover's upgrade), so both views must agree."""
        statuses = {name: release["status"] for name, release in helm_releases(real_cluster, namespace).items()}
        settled = sorted(statuses) == expected and set(statuses.values()) == {"deployed"}
        return statuses if settled and not pending(real_cluster, namespace) else {}
    wait_until(all_deployed, timeout=240, interval=1, what=f"one deployed release each (left pending: {caught})")
    for name in AGENTS:
        deployments = real_cluster.json("get", "deployments", "-n", namespace,
                                        "-l", f"app.kubernetes.io/instance=agent-{name}")["items"]
        assert len(deployments) == 1
    real_cluster.wait_ready(namespace, [("agent", name) for name in AGENTS])
