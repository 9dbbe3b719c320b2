"""kaos.helm against the real helm binary (no cluster needed for rendering)."""

import pytest

from kaos.helm import Helm, HelmError
from kaos.reconcile import Ref, plan
from kaos.settings import Settings
from tests.charts.manifests import problems
from tests.reconcile.builders import NS, agent, endpoint_of, mcpserver, modelapi

SETTINGS = Settings(gateway_enabled=True, network_policy_enabled=True, operator_namespace="kaos-system")


@pytest.mark.parametrize(
    "resource, observed",
    [
        (agent(mcp=["tools"], access=["worker"]), [modelapi(), mcpserver(), agent("worker")]),
        (modelapi(), []),
        (modelapi(mode="Hosted"), []),
        (mcpserver(), []),
    ],
)
async def test_rendered_release_of_a_plan_is_valid_kubernetes(resource, observed):
    known = {Ref(o["kind"], NS, o["metadata"]["name"]): o for o in observed}
    result = plan(resource, known, SETTINGS, endpoint_of)
    objects = await Helm(SETTINGS).render(result.chart, result.release, NS, result.values)
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service", "HTTPRoute", "NetworkPolicy"} <= kinds
    assert [p for obj in objects for p in problems(obj)] == []
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["metadata"]["name"] == result.release


async def test_chart_schema_errors_carry_helms_message():
    with pytest.raises(HelmError, match="replicas"):
        await Helm(SETTINGS).render("agent", "agent-x", NS, {"name": "x", "replicas": "two"})


async def test_missing_chart_names_the_folder(tmp_path):
    with pytest.raises(HelmError, match="KAOS_CHARTS_DIR"):
        await Helm(Settings(charts_dir=tmp_path)).render("agent", "agent-x", NS, {"name": "x"})


def test_missing_helm_binary_is_a_clear_error():
    with pytest.raises(HelmError, match="helm not found.*KAOS_HELM"):
        Helm(Settings(helm="/nonexistent/helm")).client


def test_the_helm_program_comes_from_kaos_helm():
    assert Helm(Settings.from_env({"KAOS_HELM": "/opt/helm/bin/helm"})).executable == "/opt/helm/bin/helm"


def test_without_kaos_helm_the_helm_on_path_then_the_clone_s_own(tmp_path, monkeypatch):
    """scripts/setup keeps helm in <clone>/.tools/bin, beside <clone>/charts: found without PATH."""
    def program(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return str(path)

    settings = Settings(charts_dir=tmp_path / "clone" / "charts")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert Helm(settings).executable == "helm", "none anywhere: Helm.client says it is not found"
    in_clone = program(tmp_path / "clone" / ".tools" / "bin" / "helm")
    assert Helm(settings).executable == in_clone
    on_path = program(tmp_path / "bin" / "helm")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert Helm(settings).executable == on_path, "PATH comes first"
    assert Helm(Settings(charts_dir=settings.charts_dir, helm="/opt/helm")).executable == "/opt/helm"


async def test_install_and_uninstall_errors_come_back_from_helm(tmp_path, monkeypatch):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    helm = Helm(Settings())
    values = plan(mcpserver(), {}, SETTINGS, endpoint_of).values
    with pytest.raises(HelmError) as raised:
        await helm.apply("mcpserver", "mcpserver-tools", NS, values)
    assert "127.0.0.1:9" in str(raised.value) and raised.value.command == "upgrade --install mcpserver-tools"
    with pytest.raises(HelmError, match="127.0.0.1:9"):
        await helm.uninstall("mcpserver-tools", NS)
