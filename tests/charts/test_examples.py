"""Every manifest under examples/ is valid for the CRDs (defaults applied), goes through the
reconcile core into a workload chart, and renders valid Kubernetes objects. Invalid resources
are rejected with a message that names the field."""

import copy
import json
from pathlib import Path

import httpx
import pytest
import yaml

from kaos import crds
from kaos.api import AGENT, API_VERSION, GROUP, MCPSERVER, MEMORYSTORE, MODELAPI, TRIGGER
from kaos.reconcile import DEPLOY, cluster_endpoint_of, dependencies, plan, ref_of
from kaos.reconcile.memorystore import Probe, memory_store_status, resolve
from kaos.settings import Settings
from tests.charts import kubelet
from tests.charts.manifests import problems
from tests.charts.rendering import ROOT, render
from tests.support.processes import wait_until_ok

EXAMPLES = ROOT / "examples"
FOLDERS = sorted({p.parent for p in EXAMPLES.rglob("*.yaml")})
REQUIRED = ["single-agent", "agent-with-mcp", "multi-agent", "hosted-ollama"]


def documents(folder: Path) -> list[dict]:
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def valid(folder: Path) -> list[dict]:
    """The KAOS resources of a folder, validated (the Secrets some examples hold are plain v1 objects)."""
    return [crds.validate(doc) for doc in documents(folder) if doc.get("apiVersion") != "v1"]


def test_the_required_examples_exist():
    names = {folder.name for folder in FOLDERS}
    assert set(REQUIRED) <= names, f"missing examples: {set(REQUIRED) - names}"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_every_example_manifest_validates_against_the_crds(folder):
    resources = valid(folder)
    assert resources, f"{folder} holds no manifest"
    kinds = {r["kind"] for r in resources}
    assert "Agent" in kinds or folder.name == "quickstart"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_every_example_renders_through_the_reconcile_core_into_valid_objects(folder):
    resources = valid(folder)
    known = {ref_of(r): r for r in resources}
    settings = Settings(gateway_enabled=True, network_policy_enabled=True,  # and a platform Redis (memory.redis)
                        memory_redis_url="redis://kaos-redis.kaos-system.svc.cluster.local:6379/0")
    endpoint_of = cluster_endpoint_of(settings, known)
    for resource in resources:
        if resource["kind"] in (TRIGGER, MEMORYSTORE):  # no workload (tests/triggers, tests/reconcile/test_memorystore)
            continue
        observed = {}
        for ref in dependencies(resource):
            assert ref in known, f"{ref} used by {ref_of(resource)} is not in {folder.name}"
            observed[ref] = {**known[ref], "status": ready_status(known[ref], known, settings, endpoint_of)}
        result = plan(resource, observed, settings, endpoint_of)
        assert result.phase == DEPLOY, result.message
        if result.values is None:
            continue
        objects = render(result.chart, result.values, release=result.release, namespace="default")
        found = [p for obj in objects for p in problems(obj)]
        assert not found, "\n".join(found)


def ready_status(resource: dict, known: dict, settings, endpoint_of) -> dict:
    """The status of a dependency that is ready: a MemoryStore's as its control plane writes it
    once the store and the embedder answered."""
    if resource["kind"] != MEMORYSTORE:
        return {"ready": True, "phase": "Ready"}
    models = {ref: {**known[ref], "status": {"ready": True}} for ref in dependencies(resource)}
    return memory_store_status(resource, resolve(resource, models, settings, endpoint_of), Probe("", ""))


def agent(**spec):
    return {"apiVersion": API_VERSION, "kind": AGENT, "metadata": {"name": "worker", "namespace": "default"},
            "spec": {"modelAPI": "llm", **spec}}


@pytest.mark.parametrize("resource,message", [
    ({**agent(), "spec": {"config": {}}}, "Agent default/worker: spec.modelAPI: required field is missing"),
    (agent(config={"reasoningLoopMaxSteps": 50}),
     "Agent default/worker: spec.config.reasoningLoopMaxSteps: 50 is greater than the maximum of 20"),
    (agent(config={"reasoningLoopMaxSteps": 0}), "spec.config.reasoningLoopMaxSteps: 0 is less than the minimum of 1"),
    ({"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "llm"}, "spec": {"mode": "Cloud"}},
     "ModelAPI default/llm: spec.mode: 'Cloud' is not one of ['Proxy', 'Hosted']"),
    (agent(config={"memory": {"enabeld": False}}), "spec.config.memory.enabeld: unknown field"),
    (agent(config={"env": [{"value": "x"}]}), "spec.config.env[0].name: required field is missing"),
    (agent(gatewayRoute={"timeout": "2 minutes"}), "spec.gatewayRoute.timeout"),
    ({**agent(), "metadata": {"name": "Worker_1"}}, "metadata.name: 'Worker_1' is not an RFC 1123 label"),
    ({**agent(), "metadata": {"name": "w", "namespace": "../../out/x"}},
     "metadata.namespace: '../../out/x' is not an RFC 1123 label: at most 63 characters, lower case letters"),
    ({**agent(), "metadata": {"name": "w", "namespace": "UPPER_ns"}}, "metadata.namespace: 'UPPER_ns' is not an RFC 1123"),
    ({**agent(), "metadata": {"name": "w" * 50}}, "is longer than 47 characters"),
    ({**agent(), "apiVersion": f"{GROUP}/v1"}, f"apiVersion: '{GROUP}/v1' is not {API_VERSION}"),
    ({**agent(), "kind": "Agnet"}, "kind: unknown kind 'Agnet'"),
    ({"apiVersion": API_VERSION, "kind": MCPSERVER, "metadata": {"name": "t"}, "spec": {"params": "x"}},
     "spec.runtime: required field is missing"),
])
def test_invalid_resources_are_rejected_with_the_field_named(resource, message):
    with pytest.raises(crds.ValidationError) as error:
        crds.validate(resource)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


def test_several_problems_are_all_reported():
    with pytest.raises(crds.ValidationError) as error:
        crds.validate({**agent(config={"reasoningLoopMaxSteps": 50}), "spec": {"config": {"reasoningLoopMaxSteps": 50}}})
    assert "spec.modelAPI" in str(error.value) and "reasoningLoopMaxSteps" in str(error.value)
    assert len(error.value.problems) == 2


def test_defaults_are_applied_recursively_and_the_input_is_not_changed():
    resource = agent(config={"memory": {"contextLimit": 3}})
    before = copy.deepcopy(resource)
    spec = crds.validate(resource)["spec"]
    assert resource == before
    assert spec["config"]["reasoningLoopMaxSteps"] == 5
    assert spec["config"]["memory"] == {"enabled": True, "contextLimit": 3, "maxSessions": 1000, "maxSessionEvents": 500}
    assert spec["agentNetwork"] == {"access": [], "expose": True}
    assert (spec["mcpServers"], spec["waitForDependencies"]) == ([], True)
    assert "replicas" not in spec, "no default: it would exclude spec.autoscaling; unset, the chart's 1 applies"
    assert "telemetry" not in spec["config"], "objects without a default stay absent"
    telemetry = crds.validate(agent(config={"telemetry": {"endpoint": "http://otel:4317"}}))["spec"]["config"]["telemetry"]
    assert telemetry == {"endpoint": "http://otel:4317", "enabled": False}


def test_the_seed_shape_is_accepted_exactly():
    worker = {
        "apiVersion": API_VERSION, "kind": AGENT,
        "metadata": {"name": "loop-worker-del", "namespace": "kaos-e2e"},
        "spec": {
            "modelAPI": "shared-llm",
            "mcpServers": [],
            "waitForDependencies": False,
            "config": {
                "description": "Worker for agentic loop tests",
                "instructions": "You are a worker. Process tasks and respond briefly.",
                "reasoningLoopMaxSteps": 3,
                "env": [{"name": "AGENT_LOG_LEVEL", "value": "DEBUG"},
                        {"name": "MODEL_NAME", "value": "ollama/smollm2:135m"},
                        {"name": "DEBUG_MOCK_RESPONSES", "value": '["Task processed."]'}],
            },
            "agentNetwork": {"access": ["loop-coord-del"]},
        },
    }
    result = crds.validate(worker)
    assert result["spec"]["waitForDependencies"] is False
    assert result["spec"]["config"]["env"] == worker["spec"]["config"]["env"]
    hosted = {"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "shared-llm"},
              "spec": {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}}}
    assert crds.validate(hosted)["spec"]["mode"] == "Hosted"


def test_crd_dir_comes_from_kaos_charts_dir(tmp_path, monkeypatch):
    (tmp_path / "kaos" / "files" / "crds").mkdir(parents=True)
    monkeypatch.setenv("KAOS_CHARTS_DIR", str(tmp_path))
    assert crds.default_crd_dir() == tmp_path / "kaos" / "files" / "crds"
    with pytest.raises(FileNotFoundError, match="KAOS_CHARTS_DIR"):
        crds.validate(agent())
    monkeypatch.delenv("KAOS_CHARTS_DIR")
    assert crds.default_crd_dir() == ROOT / "charts" / "kaos" / "files" / "crds"
    assert set(crds.load_schemas()) == {"Agent", "ModelAPI", "MCPServer", "Trigger", "MemoryStore"}


def test_the_offline_model_of_the_examples_answers_in_real_litellm(tmp_path):
    """The single-agent example's ModelAPI, rendered by the chart, runs in the real LiteLLM proxy
    and answers the agent's model without any network."""
    resources = valid(EXAMPLES / "single-agent")
    modelapi = next(r for r in resources if r["kind"] == "ModelAPI")
    assistant = next(r for r in resources if r["kind"] == "Agent")
    settings = Settings()
    result = plan(modelapi, {}, settings, cluster_endpoint_of(settings, {}))
    proxy = kubelet.start(render(result.chart, result.values, release=result.release), tmp_path, "litellm")
    try:
        wait_until_ok(proxy, "/health/liveliness", timeout=90)
        reply = httpx.post(f"{proxy.url}/v1/chat/completions", timeout=30, json={
            "model": assistant["spec"]["model"], "messages": [{"role": "user", "content": "hello"}]})
        assert reply.status_code == 200, reply.text
        assert "mock model" in reply.json()["choices"][0]["message"]["content"]
    finally:
        proxy.stop()


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_scripted_model_replies_in_examples_are_json_lists_of_strings(folder):
    for resource in valid(folder):
        env = resource["spec"].get("config", {}).get("env", []) + resource["spec"].get("container", {}).get("env", [])
        for item in env:
            if item["name"] == "DEBUG_MOCK_RESPONSES":
                replies = json.loads(item["value"])
                assert isinstance(replies, list) and all(isinstance(r, str) for r in replies)


def test_the_status_the_reconcile_core_writes_fits_the_crd_status_schema():
    from kaos.reconcile import status

    resources = valid(EXAMPLES / "multi-agent")
    known = {ref_of(r): r for r in resources}
    settings = Settings()
    for resource in resources:
        observed = {ref: {**known[ref], "status": {"ready": True}} for ref in dependencies(resource)}
        result = plan({**resource, "metadata": {**resource["metadata"], "generation": 2}}, observed, settings,
                      cluster_endpoint_of(settings, known))
        written = status(resource, result, 1, 1)
        conditions = [{**c, "lastTransitionTime": "2026-01-01T00:00:00Z"} for c in written["conditions"]]
        crds.validate({**resource, "status": {**written, "conditions": conditions}})
