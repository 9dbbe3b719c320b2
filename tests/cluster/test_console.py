"""The console in a cluster: `console.enabled` installs it with its own ServiceAccount, which
may only read kaos.tools resources; `kaos-console` with that identity lists what the operator
reconciled."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx

from kaos.api import API_VERSION
from kaos.local.ports import free_port
from tests.cluster.controlplane import ROOT
from tests.cluster.platform import helm, install_platform, wait_ready
from tests.support.polling import wait_until


def test_console_reads_resources_with_its_own_least_privilege_identity(cluster, operator, namespace, tmp_path):
    deployment = install_platform(cluster, "--set", "console.enabled=true", "--set", "operator.replicas=0",
                                  release="kaos-console", namespace="kaos-console")
    try:
        consoles = cluster.kubectl_json("get", "deployments", "-n", "kaos-console", "-l",
                                        "app.kubernetes.io/instance=kaos-console")["items"]
        console = next(d for d in consoles if d["metadata"]["name"] != deployment["metadata"]["name"])
        service_account = console["spec"]["template"]["spec"]["serviceAccountName"]
        assert service_account != deployment["spec"]["template"]["spec"]["serviceAccountName"]
        token = cluster.create_token("kaos-console", service_account)

        with cluster.client(token) as client:
            assert client.get(f"/apis/{API_VERSION}/agents").status_code == 200
            assert client.get(f"/apis/{API_VERSION}/modelapis").status_code == 200
            for path in ("/api/v1/secrets", "/apis/apps/v1/deployments", "/api/v1/pods"):
                assert client.get(path).status_code == 403, path
            agent = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "x"},
                     "spec": {"modelAPI": "llm", "model": "m"}}
            assert client.post(f"/apis/{API_VERSION}/namespaces/{namespace}/agents", json=agent).status_code == 403

        manifests = [
            {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "llm"},
             "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"]}}},
            {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "seen"},
             "spec": {"modelAPI": "llm", "model": "gpt-4o-mini"}},
        ]
        cluster.kubectl("apply", "--server-side", "-n", namespace, "-f", "-",
                        input="\n---\n".join(json.dumps(m) for m in manifests))
        wait_ready(cluster, "Agent", "seen", namespace)

        token_file = tmp_path / "token"
        token_file.write_text(token)
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "kaos.console", "--port", str(port), "--api-server", cluster.server,
             "--token-file", str(token_file), "--ca-file", str(cluster.pki.ca_cert)],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            def listed():
                try:
                    response = httpx.get(f"http://127.0.0.1:{port}/_console/api/resources", timeout=5)
                except httpx.HTTPError:
                    return None
                return response.json() if response.status_code == 200 else None

            body = wait_until(listed, 60, interval=0.2, what="the console listing resources")
            text = json.dumps(body)
            assert '"seen"' in text and namespace in text and "Ready" in text
        finally:
            process.terminate()
            process.wait(20)
    finally:
        helm(cluster, "uninstall", "kaos-console", "-n", "kaos-console")
