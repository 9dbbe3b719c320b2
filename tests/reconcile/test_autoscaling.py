"""spec.autoscaling: the CRDs' cross-field rules (their CEL, and kaos.crds' Python twins with the
same messages), the memory rule of the reconcile core, and the values the charts get."""

import copy

import pytest
import yaml

from kaos import crds
from kaos.api import AGENT, API_VERSION, MCPSERVER, MODELAPI
from kaos.reconcile import Ref, plan
from kaos.settings import Settings
from tests.reconcile.builders import NS, agent, endpoint_of, mcpserver, modelapi

SETTINGS = Settings()
REDIS = {"backend": "redis", "redis": {"url": {"value": "redis://own:6379/0"}}}
CPU = {"minReplicas": 2, "maxReplicas": 5, "target": {"cpuUtilization": 70}}
IN_FLIGHT = {"maxReplicas": 8, "target": {"requestsInFlight": 4}}


def resource(kind, spec, name="x"):
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NS}, "spec": spec}


def agent_spec(**extra):
    return {"modelAPI": "llm", "model": "gpt-4o-mini", "memory": REDIS, **extra}


def problems_of(kind, spec) -> list[str]:
    with pytest.raises(crds.ValidationError) as error:
        crds.validate(resource(kind, spec), SETTINGS.crd_dir)
    return error.value.problems


def rule_messages(kind: str) -> dict[str, str]:
    """rule -> message of each x-kubernetes-validations rule of the kind's CRD file."""
    schema = crds.load_schemas(SETTINGS.crd_dir)[kind]
    return {rule["rule"]: rule["message"] for _, rule in crds._rules_of(schema)}


def test_replicas_and_autoscaling_together_are_refused_with_the_crds_message():
    message = rule_messages(AGENT)["!has(self.replicas) || !has(self.autoscaling)"]
    assert problems_of(AGENT, agent_spec(replicas=2, autoscaling=CPU)) == [f"spec: {message}"]
    assert "replicas and autoscaling exclude each other" in message
    assert "replicas" not in crds.validate(resource(AGENT, agent_spec(autoscaling=CPU)), SETTINGS.crd_dir)["spec"], \
        "replicas has no default, or autoscaling could never be set"


@pytest.mark.parametrize("kind, spec, path, message", [
    (AGENT, agent_spec(autoscaling={**CPU, "minReplicas": 6}), "spec.autoscaling",
     "minReplicas must not exceed maxReplicas"),
    (AGENT, agent_spec(autoscaling={"maxReplicas": 3, "target": {"cpuUtilization": 50, "requestsInFlight": 2}}),
     "spec.autoscaling.target", "set exactly one of cpuUtilization and requestsInFlight"),
    (AGENT, agent_spec(autoscaling={"maxReplicas": 3, "target": {}}),
     "spec.autoscaling.target", "set exactly one of cpuUtilization and requestsInFlight"),
    (MODELAPI, {"mode": "Hosted", "hostedConfig": {"model": "smollm2:135m"}, "autoscaling": CPU},
     "spec", "autoscaling is for Proxy ModelAPIs"),
    (MCPSERVER, {"runtime": "python-string", "url": "https://mcp.example.com/mcp", "autoscaling": CPU},
     "spec", "autoscaling needs a server KAOS deploys"),
])
def test_cross_field_rules_report_the_crds_own_message(kind, spec, path, message):
    found = problems_of(kind, spec)
    assert len(found) == 1 and found[0].startswith(f"{path}: ") and message in found[0], found
    assert found[0].removeprefix(f"{path}: ") in rule_messages(kind).values()


def test_schema_problems_come_first_and_modelapi_mcpserver_targets_are_cpu_only():
    assert problems_of(AGENT, agent_spec(autoscaling={"target": {"cpuUtilization": 50}})) == [
        "spec.autoscaling.maxReplicas: required field is missing"]
    assert problems_of(MODELAPI, {"mode": "Proxy", "proxyConfig": {"models": ["*"]},
                                  "autoscaling": {"maxReplicas": 3, "target": {"requestsInFlight": 2}}}) == [
        "spec.autoscaling.target.cpuUtilization: required field is missing",
        "spec.autoscaling.target.requestsInFlight: unknown field"]


def test_every_crd_rule_has_a_python_twin_and_an_unknown_one_fails_loading(tmp_path):
    for kind in (AGENT, MODELAPI, MCPSERVER):
        assert set(rule_messages(kind)) <= set(crds.RULES)
    crd = yaml.safe_load((SETTINGS.crd_dir / "agent.yaml").read_text())
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"].append({"rule": "self.modelAPI != 'x'", "message": "m"})
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(crd))
    with pytest.raises(ValueError, match=r"self.modelAPI != 'x'.* no Python twin in kaos.crds.RULES"):
        crds.load_schemas(tmp_path)


def observed_of(*objects):
    return {Ref(o["kind"], NS, o["metadata"]["name"]): o for o in objects}


def autoscaled_agent(autoscaling, **spec):
    built = agent(autoscaling=copy.deepcopy(autoscaling), **spec)
    del built["spec"]["replicas"]
    return built


def test_agent_values_carry_the_autoscaler_and_no_replicas():
    settings = Settings(autoscaling_keda_enabled=True, autoscaling_keda_prometheus_url="http://prom:9090")
    values = plan(autoscaled_agent(IN_FLIGHT, memory=REDIS), observed_of(modelapi()), settings, endpoint_of).values
    assert "replicas" not in values
    assert values["autoscaling"] == {"enabled": True, "minReplicas": 1, "maxReplicas": 8, "cpuUtilization": 0,
                                     "requestsInFlight": 4,
                                     "keda": {"enabled": True, "prometheusURL": "http://prom:9090"}}
    fixed = plan(agent(replicas=3, memory=REDIS), observed_of(modelapi()), SETTINGS, endpoint_of).values
    assert fixed["replicas"] == 3 and "autoscaling" not in fixed
    unset = agent(memory=REDIS)
    del unset["spec"]["replicas"]
    assert not {"replicas", "autoscaling"} & set(plan(unset, observed_of(modelapi()), SETTINGS, endpoint_of).values)


def test_modelapi_and_mcpserver_values_carry_the_autoscaler():
    for resource_ in (modelapi(autoscaling=copy.deepcopy(CPU)), mcpserver(autoscaling=copy.deepcopy(CPU))):
        values = plan(resource_, {}, SETTINGS, endpoint_of).values
        assert values["autoscaling"]["cpuUtilization"] == 70 and values["autoscaling"]["maxReplicas"] == 5
        assert "replicas" not in values
    assert not {"replicas", "autoscaling"} & set(plan(modelapi(), {}, SETTINGS, endpoint_of).values)


@pytest.mark.parametrize("spec, settings, phase, in_message", [
    ({}, SETTINGS, "Failed", "autoscaling up to 5 replicas needs a shared memory backend"),
    ({}, SETTINGS, "Failed", "or autoscaling.maxReplicas to 1"),
    ({"memory": REDIS}, SETTINGS, "Deploy", ""),
    ({}, Settings(memory_backend="redis", memory_redis_url="redis://platform:6379/0"), "Deploy", ""),
    ({"config": {"description": "d", "memory": {"enabled": False}}}, SETTINGS, "Deploy", ""),
])
def test_autoscaling_needs_a_shared_memory(spec, settings, phase, in_message):
    result = plan(autoscaled_agent(CPU, **spec), observed_of(modelapi()), settings, endpoint_of)
    assert result.phase == phase and in_message in result.message, result.message
    one_at_most = plan(autoscaled_agent({**CPU, "minReplicas": 1, "maxReplicas": 1}), observed_of(modelapi()),
                       SETTINGS, endpoint_of)
    assert one_at_most.phase == "Deploy", one_at_most.message


def test_keda_settings_default_to_the_platform_chart_values():
    values = yaml.safe_load((SETTINGS.charts_dir / "kaos" / "values.yaml").read_text())["autoscaling"]["keda"]
    settings = Settings.from_env({})
    assert (settings.autoscaling_keda_enabled, settings.autoscaling_keda_prometheus_url) == (
        values["enabled"], values["prometheusURL"])
    read = Settings.from_env({"KAOS_AUTOSCALING_KEDA_ENABLED": "true",
                              "KAOS_AUTOSCALING_KEDA_PROMETHEUS_URL": "http://prom:9090"})
    assert (read.autoscaling_keda_enabled, read.autoscaling_keda_prometheus_url) == (True, "http://prom:9090")
