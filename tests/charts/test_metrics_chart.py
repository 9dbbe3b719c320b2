"""Prometheus scraping in the charts: the agent pods' annotations, the ServiceMonitor only
when asked for AND the cluster serves its CRD, the operator's metrics port."""

import json

import yaml

from tests.charts.rendering import CHARTS, NAMESPACE, one, render, run_helm

BASE = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}
SERVICE_MONITOR_API = "monitoring.coreos.com/v1/ServiceMonitor"


def agent_with_api_versions(values: dict, *api_versions: str) -> list[dict]:
    """helm template as against a cluster that serves ``api_versions`` (what helm install discovers)."""
    args = ["template", "agent-release", str(CHARTS / "agent"), "--namespace", NAMESPACE, "-f", "-"]
    for version in api_versions:
        args += ["--api-versions", version]
    result = run_helm(args, stdin=json.dumps({**BASE, **values}))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def pod_annotations(docs: list[dict]) -> dict:
    return one(docs, "Deployment")["spec"]["template"]["metadata"].get("annotations", {})


def test_agent_pods_carry_scrape_annotations_and_user_annotations_win():
    assert pod_annotations(render("agent", BASE)) == {
        "prometheus.io/scrape": "true", "prometheus.io/port": "8000", "prometheus.io/path": "/metrics"}
    docs = render("agent", {**BASE, "service": {"port": 8123},
                            "podAnnotations": {"prometheus.io/scrape": "false", "team": "a"}})
    assert pod_annotations(docs) == {"prometheus.io/scrape": "false", "prometheus.io/port": "8123",
                                     "prometheus.io/path": "/metrics", "team": "a"}
    assert pod_annotations(render("agent", {**BASE, "metrics": {"annotations": False}})) == {}


def test_service_monitor_needs_the_value_and_the_crd():
    monitor = {"metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}}}}
    assert not [d for d in agent_with_api_versions(monitor) if d["kind"] == "ServiceMonitor"]  # no CRD
    assert not [d for d in agent_with_api_versions({}, SERVICE_MONITOR_API) if d["kind"] == "ServiceMonitor"]
    assert not [d for d in agent_with_api_versions({**monitor, "expose": False}, SERVICE_MONITOR_API)
                if d["kind"] == "ServiceMonitor"]  # no Service to watch
    docs = agent_with_api_versions(monitor, SERVICE_MONITOR_API)
    service, found = one(docs, "Service"), one(docs, "ServiceMonitor", "agent-coordinator")
    assert found["apiVersion"] == "monitoring.coreos.com/v1"
    assert found["metadata"]["labels"]["release"] == "prom"
    assert found["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert found["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "15s"}]


def env_of(docs: list[dict]) -> dict:
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {item["name"]: item.get("value") for item in container["env"]}


def test_metrics_off_turns_off_the_endpoint_the_annotations_and_the_service_monitor():
    assert "METRICS_ENABLED" not in env_of(render("agent", BASE))  # on: the runtime's default
    off = {"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}}
    docs = agent_with_api_versions(off, SERVICE_MONITOR_API)
    assert env_of(docs)["METRICS_ENABLED"] == "false"
    assert pod_annotations(docs) == {}
    assert not [d for d in docs if d["kind"] == "ServiceMonitor"]


def test_operator_metrics_port_and_platform_service_monitor_setting():
    docs = render("kaos", {"metrics": {"serviceMonitor": {"enabled": True}}})
    settings = one(docs, "ConfigMap")["data"]
    assert settings["KAOS_METRICS_PORT"] == "9090" and settings["KAOS_SERVICE_MONITOR_ENABLED"] == "true"
    deployment = one(docs, "Deployment", next(d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"
                                              and "operator" in d["metadata"]["name"]))
    ports = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert {"name": "metrics", "containerPort": 9090, "protocol": "TCP"} in ports
    assert deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == "9090"
    off = render("kaos", {"operator": {"metricsPort": 0}})
    operator = next(d for d in off if d["kind"] == "Deployment" and "operator" in d["metadata"]["name"])
    assert "prometheus.io/scrape" not in operator["spec"]["template"]["metadata"]["annotations"]
