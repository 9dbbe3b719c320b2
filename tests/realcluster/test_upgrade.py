"""The platform upgraded in place with real pods (issue 19's upgrade, where kwok cannot go): the
installed platform chart (from the registry, by scripts/cluster up) is upgraded to a next
release whose Agent CRD has a new optional field, with an agent Ready and a conversation in the
platform's Redis; the operator's pod is replaced, the agent stays Ready, the session continues
on the same Redis, the new field is accepted, and `helm rollback` returns the platform with the
session still there. tests/gitops/test_upgrade.py upgrades from the previous chart (CRDs in
crds/) on the kwok tier, with every workload release rolled."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid

import pytest
import yaml

from tests.gitops.release import charts_with_a_new_agent_field
from tests.realcluster.conftest import ROOT, RealCluster
from tests.realcluster.manifests import agent, as_list, mock_modelapi
from tests.realcluster.test_reliability import chat, user_messages
from tests.support.polling import wait_until

RELEASE, PLATFORM = "kaos", "kaos-system"
pytestmark = pytest.mark.timeout(900)


def helm(cluster: RealCluster, *args: str) -> str:
    done = subprocess.run([str(ROOT / ".tools" / "bin" / "helm"), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KUBECONFIG": cluster.kubeconfig})
    assert done.returncode == 0, done.stderr
    return done.stdout


def next_platform_chart(folder) -> str:
    """This checkout's platform chart at its next patch version, its Agent CRD with one more
    optional field (spec.owner)."""
    charts, _ = charts_with_a_new_agent_field(folder)
    subprocess.run([str(ROOT / "scripts" / "chart-deps"), str(charts)], check=True, capture_output=True)
    return str(charts / "kaos")


def agent_fields(cluster: RealCluster) -> set[str]:
    crd = cluster.json("get", "crd", "agents.kaos.tools")
    return set(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])


def operator_pods(cluster: RealCluster) -> set[str]:
    pods = cluster.json("get", "pods", "-n", PLATFORM, "-l", "app.kubernetes.io/component=operator")["items"]
    return {pod["metadata"]["uid"] for pod in pods if all(c.get("ready") for c in pod["status"].get("containerStatuses") or [{}])}


class PhaseWatch:
    """Polls a resource's phase in a thread; ``left`` lists the phases other than Ready seen."""

    def __init__(self, cluster: RealCluster, namespace: str, kind: str, name: str):
        self.path = f"/apis/kaos.tools/v1alpha1/namespaces/{namespace}/{kind}s/{name}"
        self.cluster, self.left, self.samples = cluster, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with self.cluster.api() as api:
            while not self._stop.is_set():
                phase = (api.get(self.path).json().get("status") or {}).get("phase")
                self.samples += 1
                if phase != "Ready":
                    self.left.append((time.monotonic(), phase))
                self._stop.wait(0.5)

    def __enter__(self) -> "PhaseWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def test_a_platform_upgrade_with_a_crd_change_keeps_the_session_and_rolls_back(real_cluster, namespace, tmp_path):
    real_cluster.kubectl("apply", "-n", namespace, "-f", "-", input=as_list(
        mock_modelapi("llm", "Noted."), agent("keeper", "llm", memory="redis")))
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), ("agent", "keeper")])
    session = f"up-{uuid.uuid4().hex[:8]}"
    assert chat(real_cluster, namespace, "keeper", "My number is 7.", session) == "Noted."
    installed = yaml.safe_load(helm(real_cluster, "status", RELEASE, "-n", PLATFORM, "-o", "yaml"))["version"]
    assert "owner" not in agent_fields(real_cluster)
    before = operator_pods(real_cluster)

    chart = next_platform_chart(tmp_path)
    with PhaseWatch(real_cluster, namespace, "agent", "keeper") as watch:
        helm(real_cluster, "upgrade", RELEASE, chart, "-n", PLATFORM, "--reuse-values", "--wait", "--timeout", "5m")
        assert "owner" in agent_fields(real_cluster)
        wait_until(lambda: operator_pods(real_cluster) and not operator_pods(real_cluster) & before, timeout=180,
                   interval=1, what="the upgraded operator's pod ready")
        real_cluster.kubectl("patch", "agent", "keeper", "-n", namespace, "--type", "merge",
                             "-p", '{"spec": {"owner": "team-a"}}')
        real_cluster.wait_ready(namespace, [("agent", "keeper")])
        assert chat(real_cluster, namespace, "keeper", "What was my number?", session) == "Noted."
    assert watch.samples > 10 and watch.left == [], watch.left
    assert user_messages(real_cluster, namespace, "keeper", session) == ["My number is 7.", "What was my number?"]
    assert real_cluster.json("get", "agent", "keeper", "-n", namespace)["spec"]["owner"] == "team-a"

    upgraded = operator_pods(real_cluster)
    helm(real_cluster, "rollback", RELEASE, str(installed), "-n", PLATFORM, "--wait", "--timeout", "5m")
    wait_until(lambda: operator_pods(real_cluster) and not operator_pods(real_cluster) & upgraded, timeout=180,
               interval=1, what="the rolled-back operator's pod ready")
    assert real_cluster.json("get", "crd", "agents.kaos.tools"), "a rollback deleted a kept CRD"
    real_cluster.wait_ready(namespace, [("modelapi", "llm"), ("agent", "keeper")])
    assert chat(real_cluster, namespace, "keeper", "And now?", session) == "Noted."
    assert user_messages(real_cluster, namespace, "keeper", session) == [
        "My number is 7.", "What was my number?", "And now?"]
