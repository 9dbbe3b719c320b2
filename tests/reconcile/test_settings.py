from pathlib import Path

import pytest
import yaml

from kaos.settings import REPO_CHARTS_DIR, Settings, SettingsError

VALUES = yaml.safe_load((REPO_CHARTS_DIR / "kaos" / "values.yaml").read_text())


def test_defaults_equal_the_platform_chart_values():
    settings = Settings.from_env({})
    images = VALUES["images"]
    for image, key in ((settings.litellm_image, "litellm"), (settings.ollama_image, "ollama")):
        assert image.values() == {
            "repository": images[key]["repository"], "tag": images[key]["tag"], "pullPolicy": images[key]["pullPolicy"]
        }
    assert settings.runtime_image.repository == images["runtime"]["repository"]
    assert settings.runtime_image.tag  # empty in values: the app version
    assert settings.gateway_enabled == VALUES["gateway"]["enabled"]
    assert settings.gateway_name == VALUES["gateway"]["name"]
    assert settings.gateway_namespace == VALUES["gateway"]["namespace"]
    assert settings.gateway_timeout == VALUES["gateway"]["timeout"]
    assert settings.network_policy_enabled == VALUES["networkPolicy"]["enabled"]
    assert dict(settings.gateway_namespace_selector) == VALUES["networkPolicy"]["gatewayNamespaceSelector"]
    assert settings.telemetry_enabled == VALUES["telemetry"]["enabled"]
    assert settings.telemetry_endpoint == VALUES["telemetry"]["endpoint"]
    assert list(settings.watch_namespaces) == VALUES["watchNamespaces"]
    assert dict(settings.mcp_runtimes) == (VALUES["mcpRuntimes"] or {})
    assert settings.log_level == VALUES["operator"]["logLevel"]
    assert settings.health_port == VALUES["operator"]["healthPort"]
    assert settings.metrics_port == 0 and VALUES["operator"]["metricsPort"] == 9090  # off unless the chart says
    assert settings.service_monitor_enabled == VALUES["metrics"]["serviceMonitor"]["enabled"]
    assert settings.charts_dir == REPO_CHARTS_DIR
    assert settings.cluster_domain == VALUES.get("clusterDomain", "cluster.local")


def test_from_env_reads_every_kaos_variable():
    settings = Settings.from_env({
        "KAOS_CHARTS_DIR": "/opt/kaos/charts",
        "KAOS_RUNTIME_IMAGE_REPOSITORY": "r/rt", "KAOS_RUNTIME_IMAGE_TAG": "9", "KAOS_RUNTIME_IMAGE_PULL_POLICY": "Always",
        "KAOS_LITELLM_IMAGE_TAG": "t2", "KAOS_OLLAMA_IMAGE_REPOSITORY": "o/o",
        "KAOS_GATEWAY_ENABLED": "true", "KAOS_GATEWAY_NAME": "gw", "KAOS_GATEWAY_NAMESPACE": "",
        "KAOS_OPERATOR_NAMESPACE": "kaos-system", "KAOS_GATEWAY_TIMEOUT": "60s",
        "KAOS_NETWORK_POLICY_ENABLED": "True", "KAOS_GATEWAY_NAMESPACE_SELECTOR": '{"a": "b"}',
        "KAOS_TELEMETRY_ENABLED": "1", "KAOS_TELEMETRY_ENDPOINT": "http://otel:4317",
        "KAOS_WATCH_NAMESPACES": "a, b", "KAOS_MCP_RUNTIMES": '{"fetch": {"port": 9000}}',
        "KAOS_CLUSTER_DOMAIN": "k8s.local", "KAOS_LOG_LEVEL": "debug", "KAOS_HEALTH_PORT": "9090",
        "KAOS_HEALTH_HOST": "127.0.0.1", "KAOS_RESYNC_SECONDS": "0.5", "KAOS_HELM_RETRY_SECONDS": "2",
        "KAOS_HELM": "/opt/helm", "KAOS_HOME": "/var/kaos", "KAOS_ALLOWED_HOSTS": "kaos.example, tunnel:9000",
    })
    assert settings.charts_dir == Path("/opt/kaos/charts")
    assert settings.crd_dir == Path("/opt/kaos/charts/kaos/files/crds")
    assert settings.helm == "/opt/helm" and settings.home == Path("/var/kaos")
    assert settings.runtime_image.reference == "r/rt:9" and settings.runtime_image.pull_policy == "Always"
    assert settings.litellm_image.tag == "t2" and settings.ollama_image.repository == "o/o"
    assert settings.gateway_enabled and settings.gateway_name == "gw"
    assert settings.gateway_parent_namespace == "kaos-system" and settings.gateway_timeout == "60s"
    assert settings.network_policy_enabled and settings.gateway_namespace_selector == {"a": "b"}
    assert settings.telemetry_enabled and settings.telemetry_endpoint == "http://otel:4317"
    assert settings.watch_namespaces == ("a", "b")
    assert settings.mcp_runtimes == {"fetch": {"port": 9000}}
    assert settings.cluster_domain == "k8s.local" and settings.log_level == "DEBUG" and settings.health_port == 9090
    assert settings.health_host == "127.0.0.1"
    assert settings.resync_seconds == 0.5 and settings.helm_retry_seconds == 2.0
    assert settings.allowed_hosts == ("kaos.example", "tunnel:9000")


@pytest.mark.parametrize(
    "env, name",
    [
        ({"KAOS_GATEWAY_ENABLED": "maybe"}, "KAOS_GATEWAY_ENABLED"),
        ({"KAOS_HEALTH_PORT": "x"}, "KAOS_HEALTH_PORT"),
        ({"KAOS_MCP_RUNTIMES": "[1, 2]"}, "KAOS_MCP_RUNTIMES"),
        ({"KAOS_RESYNC_SECONDS": "0"}, "KAOS_RESYNC_SECONDS"),
        ({"KAOS_HELM_RETRY_SECONDS": "soon"}, "KAOS_HELM_RETRY_SECONDS"),
        ({"KAOS_GATEWAY_NAMESPACE_SELECTOR": "a: [b"}, "KAOS_GATEWAY_NAMESPACE_SELECTOR"),
        ({"KAOS_ALLOWED_HOSTS": "http://kaos.example"}, "KAOS_ALLOWED_HOSTS"),
    ],
)
def test_bad_values_name_the_variable(env, name):
    with pytest.raises(SettingsError, match=name):
        Settings.from_env(env)


def test_a_bad_value_says_what_is_expected():
    with pytest.raises(ValueError) as error:
        Settings.from_env({"KAOS_GATEWAY_ENABLED": "maybe", "KAOS_HEALTH_PORT": "x"})
    assert str(error.value) == "KAOS_GATEWAY_ENABLED='maybe': expected true or false; KAOS_HEALTH_PORT='x': expected an integer"


def test_empty_or_blank_is_the_default_and_values_are_stripped():
    settings = Settings.from_env({"KAOS_GATEWAY_NAME": "", "KAOS_CLUSTER_DOMAIN": "   ", "KAOS_LOG_LEVEL": " warning ",
                                  "KAOS_WATCH_NAMESPACES": "a b", "KAOS_MCP_RUNTIMES": "fetch: {port: 9000}"})
    assert settings.gateway_name == "kaos-gateway" and settings.cluster_domain == "cluster.local"
    assert settings.log_level == "WARNING" and settings.watch_namespaces == ("a", "b")
    assert settings.mcp_runtimes == {"fetch": {"port": 9000}}, "a mapping may be YAML"
    assert Settings.from_env({"KAOS_HOME": "~/k"}).home == Path("~/k").expanduser()


def test_from_env_reads_os_environ_and_the_constructor_reads_nothing(monkeypatch):
    monkeypatch.setenv("KAOS_HEALTH_PORT", "9191")
    assert Settings.from_env().health_port == 9191
    assert Settings().health_port == 8080
    assert Settings(health_port=7).health_port == 7
