"""An A2A agent named by URL in agentNetwork.access (issue 12): the CRD accepts a name or an
http(s) URL and says clearly when an entry is neither; the reconcile core makes no dependency of
a URL and passes it on once; the agent chart renders it as A2A_PEER_URLS, beside the named
peers' variables and pod labels, which stay as they were."""

import pytest

from kaos import crds
from kaos.api import API_VERSION
from kaos.reconcile import AGENT, MODELAPI, Ref, dependencies, plan
from kaos.settings import Settings
from tests.charts.rendering import container, env_of, one, render
from tests.reconcile.builders import NS, agent, endpoint_of, modelapi

TRAVEL = "https://agents.example.com/travel"
CARD = "http://a2a.other.svc.cluster.local:9999/.well-known/agent-card.json"


def coordinator(**spec):
    return agent("coord", access=["worker", TRAVEL, CARD, TRAVEL], **spec)


def test_a_url_is_no_dependency_and_reaches_the_values_once():
    resource = coordinator()
    assert dependencies(resource) == [Ref(MODELAPI, NS, "llm"), Ref(AGENT, NS, "worker")]
    result = plan(resource, {Ref(MODELAPI, NS, "llm"): modelapi(), Ref(AGENT, NS, "worker"): agent("worker")},
                  Settings(), endpoint_of)
    assert result.phase == "Deploy" and result.not_ready == ()
    assert result.values["a2aPeers"] == [TRAVEL, CARD]
    assert result.values["peers"] == [{"name": "worker", "url": "http://agent-worker.team:8000"}]


def test_nothing_waits_for_a_url():
    result = plan(agent("coord", access=[TRAVEL]), {Ref(MODELAPI, NS, "llm"): modelapi()}, Settings(), endpoint_of)
    assert (result.phase, result.message, result.values["a2aPeers"]) == ("Deploy", "", [TRAVEL])


def test_the_chart_renders_the_urls_as_a2a_peer_urls_and_labels_only_named_peers():
    values = plan(coordinator(), {Ref(MODELAPI, NS, "llm"): modelapi(), Ref(AGENT, NS, "worker"): agent("worker")},
                  Settings(network_policy_enabled=True), endpoint_of).values
    docs = render("agent", values)
    env = env_of(container(docs))
    assert env["A2A_PEER_URLS"] == f"{TRAVEL},{CARD}"
    assert env["PEER_AGENTS"] == "worker"
    assert [name for name in env if name.startswith("PEER_AGENT_")] == ["PEER_AGENT_WORKER_CARD_URL"]
    labels = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert [key for key in labels if key.startswith("kaos.tools/peer-")] == ["kaos.tools/peer-worker"]
    assert "A2A_PEER_URLS" not in env_of(container(render("agent", {**values, "a2aPeers": []})))


@pytest.mark.parametrize("entry", ["Worker One", "ftp://files.example.com", "https://a.example.com/x,y", "worker-"])
def test_the_crd_refuses_an_entry_that_is_neither_a_name_nor_a_url(entry):
    document = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "coord", "namespace": NS},
                "spec": {"modelAPI": "llm", "agentNetwork": {"access": ["worker", entry]}}}
    with pytest.raises(crds.ValidationError) as refused:
        crds.validate(document)
    assert str(refused.value) == (
        f"Agent {NS}/coord: spec.agentNetwork.access[1]: {entry!r} is invalid: expected an Agent's name (a "
        "DNS-1123 label, such as worker) or the http(s) URL of an A2A agent (such as "
        "https://agents.example.com/travel), without spaces or commas")
    document["spec"]["agentNetwork"]["access"][1] = CARD
    assert crds.validate(document)["spec"]["agentNetwork"]["access"] == ["worker", CARD]
