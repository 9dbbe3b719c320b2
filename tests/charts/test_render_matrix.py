"""Every chart rendered with every values file in its ci/ folder: each object is valid for the
Kubernetes API (strict, offline), carries the design's labels, and Helm 3 renders the same."""

import pytest
import yaml

from tests.charts.manifests import problems
from tests.charts.rendering import ALL_CHARTS, CHARTS, WORKLOAD_CHARTS, ci_values_files, helm3, render

CASES = [(chart, path) for chart in ALL_CHARTS for path in ci_values_files(chart)]
IDS = [f"{chart}-{path.stem}" for chart, path in CASES]
COMPONENT = {"agent": "agent", "modelapi": "modelapi", "mcpserver": "mcpserver"}


@pytest.mark.parametrize("chart,values", CASES, ids=IDS)
def test_every_rendered_object_is_valid_kubernetes(chart, values):
    docs = render(chart, files=[values], crds=chart == "kaos")
    found = [p for doc in docs for p in problems(doc)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("chart,values", CASES, ids=IDS)
def test_helm3_renders_the_same_objects(chart, values):
    assert render(chart, files=[values], helm=helm3()) == render(chart, files=[values])


@pytest.mark.parametrize("chart,values", [c for c in CASES if c[0] in WORKLOAD_CHARTS],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] in WORKLOAD_CHARTS])
def test_workload_objects_carry_the_design_labels(chart, values):
    meta = yaml.safe_load((CHARTS / chart / "Chart.yaml").read_text())
    docs = render(chart, files=[values])
    for doc in docs:
        labels = doc["metadata"]["labels"]
        name = labels[f"kaos.tools/{chart}"]
        assert labels["app.kubernetes.io/name"] == chart
        assert labels["app.kubernetes.io/instance"] == f"{chart}-release", "the release name (render's default release)"
        assert labels["app.kubernetes.io/component"] == COMPONENT[chart]
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["helm.sh/chart"] == f"{chart}-{meta['version']}"
        assert labels["app.kubernetes.io/version"] == meta["appVersion"] == "0.1.0"
        route = doc["kind"] == "HTTPRoute" and chart == "mcpserver"
        assert doc["metadata"]["name"] in ((f"mcp-{name}",) if route else (f"{chart}-{name}", f"{chart}-{name}-api-key"))


def test_the_gateway_api_check_rejects_a_broken_route():
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"},
             "spec": {"parentRefs": [{}], "rules": [{"matches": [{"path": {"type": "Prefix", "value": "x"}}],
                                                     "timeouts": {"request": "2 minutes"}}]}}
    found = problems(route)
    assert any("parentRefs.name" in p for p in found)
    assert any("path.type 'Prefix'" in p for p in found)
    assert any("start with /" in p for p in found)
    assert any("2 minutes" in p for p in found)
    rewrite = {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}
    two = {"matches": [{"path": {"type": "PathPrefix", "value": "/a"}}, {"path": {"type": "PathPrefix", "value": "/b"}}],
           "filters": [rewrite], "backendRefs": [{"name": "s", "port": 1}]}
    route["spec"] = {"parentRefs": [{"name": "g"}], "rules": [two] * 17}
    found = problems(route)
    assert any("exactly one PathPrefix" in p for p in found)
    assert any("more than the 16" in p for p in found)


def test_kubernetes_validation_rejects_an_unknown_field():
    deployment = render("agent", {"name": "w"})[-1]
    deployment["spec"]["template"]["spec"]["containers"][0]["enviroment"] = []
    assert any("enviroment" in p for p in problems(deployment))
