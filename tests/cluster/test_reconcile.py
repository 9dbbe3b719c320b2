"""The operator, under the chart's RBAC, reconciles the examples applied with
`kubectl apply --server-side` (as Argo CD does) on a real kube-apiserver."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from kaos.api import API_VERSION, CHART_OF, PLURALS
from kaos.cli.client import wait_until
from tests.cluster.controlplane import ROOT
from tests.cluster.platform import apply_server_side, releases, wait_ready

EXAMPLES = ROOT / "examples"


def manifests(folder: Path) -> list[dict]:
    documents = []
    for path in sorted(folder.glob("*.yaml")):
        documents += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return documents


class PhaseRecorder:
    """Watches a namespace's KAOS resources and records every status phase each one went through."""

    def __init__(self, cluster, namespace: str, kinds=("Agent", "ModelAPI", "MCPServer")):
        self.phases: dict[tuple[str, str], list[str]] = {}
        self._streams = []
        self._threads = [threading.Thread(target=self._watch, args=(cluster, namespace, kind), daemon=True)
                         for kind in kinds]
        self._started = threading.Barrier(len(kinds) + 1)
        for thread in self._threads:
            thread.start()
        self._started.wait(30)

    def _watch(self, cluster, namespace: str, kind: str) -> None:
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURALS[kind]}?watch=1&allowWatchBookmarks=false"
        with cluster.client() as client:
            with client.stream("GET", path, timeout=httpx.Timeout(30, read=None)) as stream:
                self._streams.append(stream)
                self._started.wait(30)
                try:
                    for line in stream.iter_lines():
                        event = json.loads(line)
                        obj = event["object"]
                        phase = (obj.get("status") or {}).get("phase")
                        seen = self.phases.setdefault((kind, obj["metadata"]["name"]), [])
                        if phase and (not seen or seen[-1] != phase):
                            seen.append(phase)
                except (httpx.HTTPError, RuntimeError):
                    return

    def close(self) -> None:
        for stream in self._streams:
            stream.close()


def test_quickstart_becomes_ready_with_one_release_per_resource(cluster, operator, namespace):
    recorder = PhaseRecorder(cluster, namespace)
    try:
        apply_server_side(cluster, EXAMPLES / "quickstart", namespace)
        resources = manifests(EXAMPLES / "quickstart")
        for item in resources:
            ready = wait_ready(cluster, item["kind"], item["metadata"]["name"], namespace, timeout=60)
            conditions = {c["type"]: c for c in ready["status"]["conditions"]}
            assert conditions["Ready"]["status"] == "True"
            assert conditions["DependenciesReady"]["status"] == "True"
            assert ready["status"]["observedGeneration"] == ready["metadata"]["generation"] == 1

        def every_ready_event_seen() -> bool:  # a watch delivers the Ready event a little after a GET shows it
            return all(recorder.phases.get((item["kind"], item["metadata"]["name"]), [None])[-1] == "Ready"
                       for item in resources)

        wait_until(every_ready_event_seen, 10, what="the watch to deliver every Ready event")
    finally:
        recorder.close()

    # Status is first written once the release exists (docs/operator.md, "Scale and cost"): on
    # kwok its Deployment may be Available by then, so the first phase seen may be Ready already.
    for item in resources:
        phases = recorder.phases.get((item["kind"], item["metadata"]["name"]), [])
        assert phases[-1] == "Ready" and set(phases) <= {"Pending", "Waiting", "Ready"}, (item["metadata"]["name"], phases)

    assert releases(cluster, namespace) == {
        "modelapi-llm": 1, "mcpserver-tools": 1, "agent-worker": 1, "agent-coordinator": 1}
    deployments = {d["metadata"]["name"]: d for d in cluster.kubectl_json("get", "deployments", "-n", namespace)["items"]}
    assert set(deployments) == {"modelapi-llm", "mcpserver-tools", "agent-worker", "agent-coordinator"}
    for deployment in deployments.values():
        assert {c["type"]: c["status"] for c in deployment["status"]["conditions"]}["Available"] == "True"
    services = {s["metadata"]["name"] for s in cluster.kubectl_json("get", "services", "-n", namespace)["items"]}
    assert set(deployments) <= services
    config_maps = {c["metadata"]["name"] for c in cluster.kubectl_json("get", "configmaps", "-n", namespace)["items"]}
    assert "modelapi-llm" in config_maps  # the LiteLLM config from configYaml
    secrets = [s["metadata"]["name"] for s in cluster.kubectl_json("get", "secrets", "-n", namespace)["items"]]
    assert sum(name.startswith("sh.helm.release.v1.") for name in secrets) == 4
    policies = {p["metadata"]["name"] for p in cluster.kubectl_json("get", "networkpolicies", "-n", namespace)["items"]}
    assert {"agent-worker", "agent-coordinator"} <= policies
    routes = {r["metadata"]["name"] for r in cluster.kubectl_json("get", "httproutes", "-n", namespace)["items"]}
    assert {"agent-worker", "agent-coordinator", "modelapi-llm", "mcp-tools"} <= routes


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name != "quickstart"))
def test_every_example_becomes_ready(cluster, operator, namespace, example):
    apply_server_side(cluster, EXAMPLES / example, namespace)
    resources = manifests(EXAMPLES / example)
    assert resources
    for item in resources:
        if item["kind"] in PLURALS:
            wait_ready(cluster, item["kind"], item["metadata"]["name"], namespace, timeout=60)
    expected = {f"{CHART_OF[i['kind']]}-{i['metadata']['name']}"
                for i in resources if i["kind"] in PLURALS and not (i["kind"] == "MCPServer" and i["spec"].get("url"))}
    assert set(releases(cluster, namespace)) == expected


def test_a_modelapi_key_given_by_value_lives_only_in_its_secret(cluster, operator, namespace, tmp_path):
    key = f"sk-planted-{uuid.uuid4().hex}"
    modelapi = {"apiVersion": API_VERSION, "kind": "ModelAPI", "metadata": {"name": "keyed"},
                "spec": {"mode": "Proxy", "proxyConfig": {"models": ["gpt-4o-mini"], "provider": "openai",
                                                          "apiKey": {"value": key}}}}
    (tmp_path / "keyed.yaml").write_text(yaml.safe_dump(modelapi))
    apply_server_side(cluster, tmp_path / "keyed.yaml", namespace)
    status = wait_ready(cluster, "ModelAPI", "keyed", namespace)["status"]

    secret = cluster.get(f"/api/v1/namespaces/{namespace}/secrets/modelapi-keyed-api-key")
    assert secret is not None, "the chart's Secret for apiKey.value was not created"
    assert base64.b64decode(secret["data"]["api-key"]).decode() == key
    deployment = cluster.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/modelapi-keyed")
    env = [e for c in deployment["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []]
    references = [e["valueFrom"]["secretKeyRef"] for e in env if "secretKeyRef" in e.get("valueFrom", {})]
    assert {"name": "modelapi-keyed-api-key", "key": "api-key"} in references, env

    encoded = base64.b64encode(key.encode()).decode()
    config_maps = cluster.kubectl_json("get", "configmaps", "-n", namespace)["items"]
    assert config_maps  # the LiteLLM config at least
    places = {"the ModelAPI's status": status, "its Deployment": deployment,
              **{f"ConfigMap {c['metadata']['name']}": c for c in config_maps}}
    for where, place in places.items():
        text = json.dumps(place)
        assert key not in text and encoded not in text, f"the key is in {where}"
