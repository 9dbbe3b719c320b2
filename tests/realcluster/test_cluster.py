"""The cluster of scripts/cluster itself: a real node whose pods serve, resolve cluster DNS names,
and answer kubectl logs and exec; a second `up` is refused while one runs."""

from __future__ import annotations

import subprocess

from tests.realcluster.conftest import ROOT, RealCluster
from tests.support.polling import wait_until

SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: web
          image: {image}
          command: [python3, -m, http.server, "8000"]
          readinessProbe: {{httpGet: {{path: /, port: 8000}}, periodSeconds: 1}}
          securityContext: {{runAsNonRoot: true, runAsUser: 10001, seccompProfile: {{type: RuntimeDefault}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80, targetPort: 8000}}]
"""


def runtime_image(cluster: RealCluster) -> str:
    """The runtime image the platform chart was installed with (it has python3)."""
    settings = cluster.json("get", "configmap", "kaos-operator-settings", "-n", "kaos-system")["data"]
    return f"{settings['KAOS_RUNTIME_IMAGE_REPOSITORY']}:{settings['KAOS_RUNTIME_IMAGE_TAG']}"


def node_ready(cluster: RealCluster) -> bool:
    nodes = cluster.json("get", "nodes")["items"]
    return any(c["type"] == "Ready" and c["status"] == "True"
               for node in nodes for c in node["status"]["conditions"])


def test_node_is_ready(real_cluster):
    assert node_ready(real_cluster)


def test_a_pod_reaches_another_through_its_service_by_dns_name(real_cluster, namespace):
    real_cluster.kubectl("apply", "-f", "-", input=SERVER.format(ns=namespace, image=runtime_image(real_cluster)))
    real_cluster.kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=120s")
    fetch = f"import urllib.request; print(urllib.request.urlopen('http://web.{namespace}.svc.cluster.local').status)"
    real_cluster.kubectl("run", "client", "-n", namespace, f"--image={runtime_image(real_cluster)}",
                         "--restart=Never", "--command", "--", "python3", "-c", fetch)

    def finished() -> str | None:
        phase = real_cluster.json("get", "pod", "client", "-n", namespace)["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    assert wait_until(finished, timeout=90, interval=0.5, what="the client pod to finish") == "Succeeded", \
        real_cluster.kubectl("logs", "client", "-n", namespace, check=False).stdout
    assert real_cluster.kubectl("logs", "client", "-n", namespace).stdout.strip() == "200"
    # The server's log shows the request, and exec runs in its container as the image's user.
    assert "GET / " in real_cluster.kubectl("logs", "deployment/web", "-n", namespace).stdout
    assert real_cluster.kubectl("exec", "deployment/web", "-n", namespace, "--", "id", "-u").stdout.strip() == "10001"


def test_a_second_up_is_refused(real_cluster):
    result = subprocess.run([str(ROOT / "scripts" / "cluster"), "up"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "already runs" in result.stderr
