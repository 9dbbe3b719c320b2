"""spec.autoscaling in the workload charts (kaos-common.autoscaling): an HPA or a KEDA ScaledObject
owns the replica count and the Deployment carries none; fixed replicas otherwise; never both."""

import pytest

from kaos.reconcile import Ref, cluster_endpoint_of, plan
from kaos.settings import Settings
from tests.charts.rendering import kinds, one, render, render_error
from tests.reconcile.builders import NS, agent, mcpserver, modelapi

AGENT = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}
MODELAPI = {"name": "llm", "mode": "Proxy", "proxy": {"models": ["gpt-4o-mini"], "provider": "openai"}}
MCPSERVER = {"name": "tools", "runtime": "python-string", "params": "def echo(m: str) -> str:\n    return m\n"}
BASES = {"agent": AGENT, "modelapi": MODELAPI, "mcpserver": MCPSERVER}
CPU = {"enabled": True, "minReplicas": 2, "maxReplicas": 6, "cpuUtilization": 70}
IN_FLIGHT = {"enabled": True, "minReplicas": 1, "maxReplicas": 10, "requestsInFlight": 4}
KEDA = {"enabled": True, "prometheusURL": "http://prometheus.monitoring.svc:9090"}


def deployment_spec(docs: list[dict]) -> dict:
    return one(docs, "Deployment")["spec"]


@pytest.mark.parametrize("chart", sorted(BASES))
def test_fixed_replicas_and_no_autoscaler_by_default(chart):
    docs = render(chart, BASES[chart])
    assert deployment_spec(docs)["replicas"] == 1
    assert "HorizontalPodAutoscaler" not in kinds(docs)
    assert deployment_spec(render(chart, {**BASES[chart], "replicas": 3}))["replicas"] == 3
    assert deployment_spec(render(chart, {**BASES[chart], "replicas": 0}))["replicas"] == 0


@pytest.mark.parametrize("chart", sorted(BASES))
def test_cpu_autoscaling_renders_an_hpa_and_a_deployment_without_replicas(chart):
    docs = render(chart, {**BASES[chart], "autoscaling": CPU}, release=f"{chart}-x")
    deployment = one(docs, "Deployment")
    assert "replicas" not in deployment["spec"]
    hpa = one(docs, "HorizontalPodAutoscaler", deployment["metadata"]["name"])
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["metadata"]["labels"] == deployment["metadata"]["labels"]
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment["metadata"]["name"]},
        "minReplicas": 2,
        "maxReplicas": 6,
        "metrics": [{"type": "Resource",
                     "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}],
    }


@pytest.mark.parametrize("chart", sorted(BASES))
def test_replicas_and_autoscaling_together_are_refused(chart):
    error = render_error(chart, {**BASES[chart], "replicas": 2, "autoscaling": CPU})
    assert "replicas (2) and autoscaling.enabled exclude each other" in error


def test_in_flight_target_is_a_pods_metric_of_the_runtime_gauge():
    docs = render("agent", {**AGENT, "autoscaling": IN_FLIGHT})
    assert "replicas" not in deployment_spec(docs)
    hpa = one(docs, "HorizontalPodAutoscaler", "agent-coordinator")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 10)
    assert hpa["spec"]["metrics"] == [{"type": "Pods", "pods": {
        "metric": {"name": "kaos_agent_requests_in_flight"}, "target": {"type": "AverageValue", "averageValue": "4"}}}]
    assert "ScaledObject" not in kinds(docs)


def test_keda_variant_is_a_scaled_object_summing_the_gauge_over_the_deployments_pods():
    docs = render("agent", {**AGENT, "autoscaling": {**IN_FLIGHT, "keda": KEDA}})
    assert "HorizontalPodAutoscaler" not in kinds(docs)  # KEDA makes its own
    assert "replicas" not in deployment_spec(docs)
    scaled = one(docs, "ScaledObject", "agent-coordinator")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"] == {
        "scaleTargetRef": {"name": "agent-coordinator"},
        "minReplicaCount": 1,
        "maxReplicaCount": 10,
        "triggers": [{"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": "http://prometheus.monitoring.svc:9090",
            "query": 'sum(kaos_agent_requests_in_flight{namespace="team",pod=~"agent-coordinator-[a-z0-9]+-[a-z0-9]+"})',
            "threshold": "4"}}],
    }
    cpu_with_keda = render("agent", {**AGENT, "autoscaling": {**CPU, "keda": KEDA}})  # KEDA is for in-flight only
    assert "ScaledObject" not in kinds(cpu_with_keda) and "HorizontalPodAutoscaler" in kinds(cpu_with_keda)


@pytest.mark.parametrize("autoscaling, message", [
    ({**CPU, "minReplicas": 7}, "minReplicas (7) must not exceed maxReplicas (6)"),
    ({**CPU, "requestsInFlight": 3}, "set exactly one of cpuUtilization and requestsInFlight"),
    ({"enabled": True, "maxReplicas": 3}, "set exactly one of cpuUtilization and requestsInFlight"),
    ({**IN_FLIGHT, "keda": {"enabled": True}}, "autoscaling.keda.enabled needs autoscaling.keda.prometheusURL"),
])
def test_autoscaler_mistakes_are_refused_with_a_message(autoscaling, message):
    assert message in render_error("agent", {**AGENT, "autoscaling": autoscaling})


def test_in_flight_target_needs_the_runtime_metrics():
    error = render_error("agent", {**AGENT, "autoscaling": IN_FLIGHT, "metrics": {"enabled": False}})
    assert "metrics.enabled false turns off" in error


def test_a_hosted_modelapi_and_an_external_mcp_server_are_not_autoscaled():
    hosted = {"name": "llm", "mode": "Hosted", "hosted": {"model": "smollm2:135m"}, "autoscaling": CPU}
    assert "autoscaling is for mode Proxy" in render_error("modelapi", hosted)
    external = render("mcpserver", {"name": "tools", "url": "https://mcp.example.com/mcp", "autoscaling": CPU})
    assert "HorizontalPodAutoscaler" not in kinds(external)


def test_disabled_autoscaling_keeps_fixed_replicas():
    docs = render("agent", {**AGENT, "replicas": 2, "autoscaling": {**CPU, "enabled": False}})
    assert deployment_spec(docs)["replicas"] == 2 and "HorizontalPodAutoscaler" not in kinds(docs)


def operator_rules(values: dict) -> set[tuple[str, str]]:
    role = one(render("kaos", values, release="kaos"), "ClusterRole", "kaos-operator")
    return {(group, resource) for rule in role["rules"] for group in rule["apiGroups"] for resource in rule["resources"]}


def test_the_platform_chart_grants_the_scalers_and_passes_the_keda_settings():
    assert ("autoscaling", "horizontalpodautoscalers") in operator_rules({})
    assert ("keda.sh", "scaledobjects") not in operator_rules({})
    keda = {"autoscaling": {"keda": {"enabled": True, "prometheusURL": "http://prom.monitoring:9090"}}}
    assert ("keda.sh", "scaledobjects") in operator_rules(keda)
    settings = one(render("kaos", keda, release="kaos"), "ConfigMap", "kaos-operator-settings")["data"]
    assert (settings["KAOS_AUTOSCALING_KEDA_ENABLED"], settings["KAOS_AUTOSCALING_KEDA_PROMETHEUS_URL"]) == (
        "true", "http://prom.monitoring:9090")
    assert "/autoscaling/keda/prometheusURL" in render_error("kaos", {"autoscaling": {"keda": {"enabled": True}}})


@pytest.mark.parametrize("target", [{"cpuUtilization": 60}, {"requestsInFlight": 3}])
def test_the_reconcile_cores_values_render_in_each_chart(target):
    """What the operator installs: plan() values for each kind, through the chart and its schema."""
    settings = Settings(autoscaling_keda_enabled=True, autoscaling_keda_prometheus_url="http://prom:9090")
    scaling = {"minReplicas": 1, "maxReplicas": 3, "target": target}
    scaled = agent(autoscaling=scaling, memory={"backend": "redis", "redis": {"url": {"value": "redis://r:6379/0"}}})
    del scaled["spec"]["replicas"]
    cpu = {**scaling, "target": {"cpuUtilization": 60}}
    observed = {Ref("ModelAPI", NS, "llm"): modelapi()}
    for resource in (scaled, modelapi(autoscaling=cpu), mcpserver(autoscaling=cpu)):
        found = plan(resource, observed, settings, cluster_endpoint_of(settings, observed))
        assert found.values is not None, found.message
        docs = render(found.chart, found.values, release=found.release)
        assert "replicas" not in deployment_spec(docs)
        keda = resource is scaled and "requestsInFlight" in target
        assert kinds(docs).count("ScaledObject" if keda else "HorizontalPodAutoscaler") == 1
