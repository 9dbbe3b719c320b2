"""The limits on resource names agree, in the charts and in the CRD validation.

Charts: a resource's name goes into its objects (<kind>-<name>), its HTTPRoute (<route>-<name>)
and the label key that lets agents in (kaos.tools/<peer|uses-modelapi|uses-mcp>-<name>); each
must fit in a 63-character DNS label. kaos-common derives every chart's limit from that one rule
(`kaos-common.names.limit`: agent 57, modelapi 49, mcpserver 53); values.schema.json states the
same numbers, since a JSON schema cannot compute them.

CRD validation (kaos.crds, what `kaos up` applies; the reconcile core's plan says the same in a
cluster): the resource becomes the Helm release <chart>-<name>, at most
kaos.api.HELM_RELEASE_NAME_MAX (53) characters: agent 47, modelapi 44, mcpserver 43.

The CRD files cannot be templated from the chart's numbers, and a chart installed on its own
(`helm install assistant charts/agent`) is not bound by the release rule, so the two limits are
not equal. These tests prove that they agree: each is exactly as tight as its rule allows (a
name at the limit renders, one over fails with a message), and every name the CRD validation
admits renders in its chart, also where another resource refers to it.
"""

import functools

import pytest

from kaos import crds
from kaos.api import AGENT, API_VERSION, CHART_OF, HELM_RELEASE_NAME_MAX, KIND_OF_CHART, MCPSERVER, MODELAPI, SEGMENT_OF
from kaos.reconcile import DEPLOY, cluster_endpoint_of, plan, ref_of
from kaos.settings import Settings
from tests.charts.manifests import problems
from tests.charts.rendering import CHARTS, WORKLOAD_CHARTS, RenderError, one, render, render_error, render_text

DNS_LABEL_MAX = 63
BASE_VALUES = {"agent": {"modelAPI": {"name": "llm", "url": "http://modelapi-llm:8000"}}, "modelapi": {},
               "mcpserver": {"params": "def echo(message: str) -> str:\n    return message\n"}}
EVERYTHING_ON = {"gateway": {"enabled": True}, "networkPolicy": {"enabled": True}}
CRD_DIR = CHARTS / "kaos" / "crds"


def renders(chart: str, name: str, skip_schema: bool = False) -> bool:
    try:
        render_text(chart, {**BASE_VALUES[chart], "name": name}, skip_schema=skip_schema)
    except RenderError:
        return False
    return True


@functools.cache
def chart_limit(chart: str) -> int:
    """The longest name the chart's templates take (found by rendering, schema skipped)."""
    return next(n for n in range(DNS_LABEL_MAX, 0, -1) if renders(chart, "a" * n, skip_schema=True))


@pytest.mark.parametrize("chart,expected", [("agent", 57), ("modelapi", 49), ("mcpserver", 53)])
def test_the_templates_and_the_schema_take_names_up_to_the_same_limit(chart, expected):
    limit = chart_limit(chart)
    assert limit == expected
    assert renders(chart, "a" * limit)
    over = "a" * (limit + 1)
    schema = render_error(chart, {**BASE_VALUES[chart], "name": over})
    assert "/name" in schema and f"maxLength: got {limit + 1}, want {limit}" in schema, schema
    template = render_error(chart, {**BASE_VALUES[chart], "name": over}, skip_schema=True)
    assert f"is longer than {limit} characters" in template and "must fit in 63" in template, template


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_the_limit_is_the_63_character_rule_and_nothing_else(chart):
    """At the limit some rendered name or label key is exactly 63 characters and none is longer."""
    docs = render(chart, {**BASE_VALUES[chart], **EVERYTHING_ON, "name": "a" * chart_limit(chart)})
    found = []
    for doc in docs:
        found.append(doc["metadata"]["name"])
        labels = dict(doc["metadata"]["labels"])
        if doc["kind"] == "NetworkPolicy":
            labels.update(doc["spec"]["ingress"][0]["from"][-1]["podSelector"]["matchLabels"])
        found += [key.split("/")[-1] for key in labels] + [str(value) for value in labels.values()]
    assert max(len(name) for name in found) == DNS_LABEL_MAX
    assert not [p for doc in docs for p in problems(doc)]


def resource(kind: str, name: str, **spec) -> dict:
    specs = {AGENT: {"modelAPI": "llm", "model": "m"}, MODELAPI: {"mode": "Proxy", "proxyConfig": {"models": ["*"]}},
             MCPSERVER: {"runtime": "python-string", "params": BASE_VALUES["mcpserver"]["params"]}}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": "default"},
            "spec": {**specs[kind], **spec}}


def admitted(kind: str, name: str) -> bool:
    try:
        crds.validate(resource(kind, name), CRD_DIR)
    except crds.ValidationError:
        return False
    return True


@functools.cache
def crd_limit(kind: str) -> int:
    return next(n for n in range(DNS_LABEL_MAX, 0, -1) if admitted(kind, "a" * n))


@pytest.mark.parametrize("kind", [AGENT, MODELAPI, MCPSERVER])
def test_the_crd_validation_admits_names_whose_release_helm_takes(kind):
    chart = CHART_OF[kind]
    limit = crd_limit(kind)
    assert len(f"{chart}-{'a' * limit}") == HELM_RELEASE_NAME_MAX
    assert limit <= chart_limit(chart), "the chart renders every name the CRD validation admits"
    # HELM_RELEASE_NAME_MAX is Helm's own limit: it takes the longest release and refuses one more
    assert render(chart, {**BASE_VALUES[chart], "name": "x"}, release="r" * HELM_RELEASE_NAME_MAX)
    assert "longer than 53" in render_error(chart, {**BASE_VALUES[chart], "name": "x"},
                                            release="r" * (HELM_RELEASE_NAME_MAX + 1))


def test_resources_named_at_the_crd_limits_render_through_the_reconcile_core():
    """Each kind at its longest name, the agent referring to the others by theirs."""
    model_api = crds.validate(resource(MODELAPI, "m" * crd_limit(MODELAPI)), CRD_DIR)
    tools = crds.validate(resource(MCPSERVER, "t" * crd_limit(MCPSERVER)), CRD_DIR)
    peer = crds.validate(resource(AGENT, "p" * crd_limit(AGENT), modelAPI=model_api["metadata"]["name"]), CRD_DIR)
    agent = crds.validate(resource(AGENT, "c" * crd_limit(AGENT), modelAPI=model_api["metadata"]["name"],
                                   mcpServers=[tools["metadata"]["name"]],
                                   agentNetwork={"access": [peer["metadata"]["name"]]}), CRD_DIR)
    ready = {"status": {"ready": True, "phase": "Ready"}}
    known = {ref_of(r): {**r, **ready} for r in (model_api, tools, peer, agent)}
    settings = Settings(charts_dir=CHARTS, gateway_enabled=True, network_policy_enabled=True)
    for item in (model_api, tools, peer, agent):
        result = plan(item, known, settings, cluster_endpoint_of(settings, known))
        assert result.phase == DEPLOY, result.message
        docs = render(result.chart, result.values, release=result.release, namespace="default")
        assert not [p for doc in docs for p in problems(doc)]


@pytest.mark.parametrize("field,refers_to", [("modelAPI", "modelapi"), ("mcpServers", "mcpserver"), ("peers", "agent")])
def test_the_agent_chart_takes_every_name_the_chart_it_refers_to_takes(field, refers_to):
    name = "r" * chart_limit(refers_to)
    endpoint = {"name": name, "url": "http://x:8000"}
    values = {"name": "w", "modelAPI": endpoint if field == "modelAPI" else BASE_VALUES["agent"]["modelAPI"]}
    if field != "modelAPI":
        values[field] = [endpoint]
    labels = one(render("agent", values), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert any(key.endswith(f"-{name}") and len(key.split("/")[-1]) <= DNS_LABEL_MAX for key in labels)


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_the_library_names_objects_and_routes_as_kaos_api_does(chart):
    """kaos-common's kinds table and kaos.api (the operator, the local gateway) agree on the names."""
    kind = KIND_OF_CHART[chart]
    docs = render(chart, {**BASE_VALUES[chart], **EVERYTHING_ON, "name": "w"}, namespace="team")
    route = one(docs, "HTTPRoute")
    assert route["metadata"]["name"] == f"{SEGMENT_OF[kind]}-w"
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == f"/team/{SEGMENT_OF[kind]}/w"
    others = {doc["metadata"]["name"] for doc in docs if doc["kind"] != "HTTPRoute"}
    assert others <= {f"{CHART_OF[kind]}-w", f"{CHART_OF[kind]}-w-api-key"}, others
