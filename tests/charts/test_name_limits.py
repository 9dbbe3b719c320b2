"""The limits on resource names come from one rule (kaos.api.name_limit) and are the same in
the charts, the CRD validation and the reconcile core.

A resource's name goes into its objects (<kind>-<name>), its HTTPRoute (<route>-<name>), the
label key that lets agents in (kaos.tools/<peer|uses-modelapi|uses-mcp>-<name>), each within a
63-character DNS label, and its Helm release <kind>-<name>, within Helm's 53: agent 47,
modelapi 44, mcpserver 43. scripts/generate writes the limits into kaos-common's kinds
table; each values.schema.json states them too (a JSON schema cannot compute them). These
tests hold all of them to kaos.api: at the limit a name renders and is admitted, one more is
refused everywhere with the binding place in the message.
"""

import functools

import pytest

from kaos import crds
from kaos.api import (
    AGENT,
    API_VERSION,
    CHART_OF,
    DNS_LABEL_MAX,
    HELM_RELEASE_NAME_MAX,
    KIND_OF_CHART,
    MCPSERVER,
    MODELAPI,
    SEGMENT_OF,
    name_limit,
)
from kaos.reconcile import DEPLOY, FAILED, cluster_endpoint_of, plan, ref_of
from kaos.settings import Settings
from tests.charts.manifests import problems
from tests.charts.rendering import CHARTS, WORKLOAD_CHARTS, RenderError, one, render, render_error, render_text

BASE_VALUES = {"agent": {"modelAPI": {"name": "llm", "url": "http://modelapi-llm:8000"}}, "modelapi": {},
               "mcpserver": {"params": "def echo(message: str) -> str:\n    return message\n"}}
EVERYTHING_ON = {"gateway": {"enabled": True}, "networkPolicy": {"enabled": True}}
CRD_DIR = CHARTS / "kaos" / "files" / "crds"


def limit_of(chart: str) -> int:
    return name_limit(KIND_OF_CHART[chart]).max


def test_the_rule_gives_the_documented_limits():
    assert {kind: name_limit(kind).max for kind in (AGENT, MODELAPI, MCPSERVER)} == {AGENT: 47, MODELAPI: 44, MCPSERVER: 43}
    assert name_limit(AGENT).place == "the Helm release agent-<name> must fit in 53"


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


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_the_templates_and_the_schema_take_names_up_to_the_kinds_limit(chart):
    limit = limit_of(chart)
    assert chart_limit(chart) == limit
    assert renders(chart, "a" * limit)
    over = "a" * (limit + 1)
    schema = render_error(chart, {**BASE_VALUES[chart], "name": over})
    assert "/name" in schema and f"maxLength: got {limit + 1}, want {limit}" in schema, schema
    template = render_error(chart, {**BASE_VALUES[chart], "name": over}, skip_schema=True)
    assert f"is longer than {limit} characters ({name_limit(KIND_OF_CHART[chart]).place})" in template, template


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_at_the_limit_every_name_and_label_fits_its_dns_label(chart):
    docs = render(chart, {**BASE_VALUES[chart], **EVERYTHING_ON, "name": "a" * limit_of(chart)},
                  release=f"{chart}-{'a' * limit_of(chart)}")
    found = []
    for doc in docs:
        found.append(doc["metadata"]["name"])
        labels = dict(doc["metadata"]["labels"])
        if doc["kind"] == "NetworkPolicy":
            labels.update(doc["spec"]["ingress"][0]["from"][-1]["podSelector"]["matchLabels"])
        found += [key.split("/")[-1] for key in labels] + [str(value) for value in labels.values()]
    assert max(len(name) for name in found) <= DNS_LABEL_MAX
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
def test_the_crd_validation_and_the_reconcile_core_refuse_what_the_charts_refuse(kind):
    limit = name_limit(kind)
    assert crd_limit(kind) == limit.max == chart_limit(CHART_OF[kind])
    assert len(f"{CHART_OF[kind]}-{'a' * limit.max}") <= HELM_RELEASE_NAME_MAX
    over = "a" * (limit.max + 1)
    with pytest.raises(crds.ValidationError, match=f"longer than {limit.max} characters"):
        crds.validate(resource(kind, over), CRD_DIR)
    settings = Settings(charts_dir=CHARTS)
    result = plan(resource(kind, over), {}, settings, cluster_endpoint_of(settings, {}))
    assert result.phase == FAILED and f"is longer than {limit.max} characters ({limit.place})" in result.message


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_helms_own_release_limit_is_the_one_kaos_api_states(chart):
    assert render(chart, {**BASE_VALUES[chart], "name": "x"}, release="r" * HELM_RELEASE_NAME_MAX)
    assert f"longer than {HELM_RELEASE_NAME_MAX}" in render_error(
        chart, {**BASE_VALUES[chart], "name": "x"}, release="r" * (HELM_RELEASE_NAME_MAX + 1))


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
def test_the_agent_chart_takes_the_names_it_refers_to_up_to_their_kinds_limit(field, refers_to):
    def values(name: str) -> dict:
        endpoint = {"name": name, "url": "http://x:8000"}
        found = {"name": "w", "modelAPI": endpoint if field == "modelAPI" else BASE_VALUES["agent"]["modelAPI"]}
        if field != "modelAPI":
            found[field] = [endpoint]
        return found

    name = "r" * limit_of(refers_to)
    labels = one(render("agent", values(name)), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert any(key.endswith(f"-{name}") and len(key.split("/")[-1]) <= DNS_LABEL_MAX for key in labels)
    assert f"want {limit_of(refers_to)}" in render_error("agent", values(name + "r"))
    assert f"longer than {limit_of(refers_to)} characters" in render_error("agent", values(name + "r"), skip_schema=True)


@pytest.mark.parametrize("chart", WORKLOAD_CHARTS)
def test_the_library_names_objects_and_routes_as_kaos_api_does(chart):
    """kaos-common's kinds table and kaos.api (the operator, the local gateway) agree on the names."""
    kind = KIND_OF_CHART[chart]
    docs = render(chart, {**BASE_VALUES[chart], **EVERYTHING_ON, "name": "w"}, namespace="team")
    route = one(docs, "HTTPRoute")
    assert route["metadata"]["name"] == f"{SEGMENT_OF[kind]}-w"
    prefix = f"/team/{SEGMENT_OF[kind]}/w"
    assert all(m["path"]["value"] == prefix or m["path"]["value"].startswith(prefix + "/")
               for rule in route["spec"]["rules"] for m in rule["matches"])
    others = {doc["metadata"]["name"] for doc in docs if doc["kind"] != "HTTPRoute"}
    assert others <= {f"{CHART_OF[kind]}-w", f"{CHART_OF[kind]}-w-api-key"}, others
