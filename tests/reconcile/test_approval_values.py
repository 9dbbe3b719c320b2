"""spec.approval of an Agent: the CRD's validation and defaults, the plan's checks of the servers and
peers it names, and the one mapping to the agent chart's ``approval`` values."""

import pytest

from kaos import crds
from kaos.api import API_VERSION
from kaos.reconcile import plan
from kaos.settings import Settings
from kaos_runtime.core.settings import ApprovalSettings
from tests.reconcile.builders import agent, endpoint_of, mcpserver, modelapi

from .test_plan import observed_of

SETTINGS = Settings()


def validated(approval) -> dict:
    document = {"apiVersion": API_VERSION, "kind": "Agent", "metadata": {"name": "ops", "namespace": "team"},
                "spec": {"modelAPI": "llm", "approval": approval}}
    return crds.validate(document, SETTINGS.crd_dir)["spec"]["approval"]


def refusal(approval) -> str:
    with pytest.raises(crds.ValidationError) as refused:
        validated(approval)
    return str(refused.value)


def test_the_crd_fills_in_the_timeout_and_what_happens_then():
    assert validated({"tools": ["delete_file"]}) == {
        "tools": ["delete_file"], "fromAnnotations": False, "timeoutSeconds": 600, "onTimeout": "reject"}
    assert validated({"fromAnnotations": True}) == {
        "tools": [], "fromAnnotations": True, "timeoutSeconds": 600, "onTimeout": "reject"}


def test_every_kind_of_entry_is_accepted():
    tools = ["delete_file", "*", "mcp:filesystem", "peer:worker", "peer:*", "peer:Travel-Agent", "fs.write"]
    assert validated({"tools": tools, "timeoutSeconds": 1, "onTimeout": "proceed"})["tools"] == tools


def test_a_block_that_gates_nothing_is_refused_with_what_to_do():
    message = refusal({"timeoutSeconds": 30})
    assert "spec.approval: approval gates nothing" in message and "fromAnnotations" in message


@pytest.mark.parametrize("approval, named", [
    ({"tools": ["delete file"]}, "spec.approval.tools[0]"),
    ({"tools": ["a,b"]}, "spec.approval.tools[0]"),
    ({"tools": ["mcp:Bad_Name"]}, "spec.approval.tools[0]"),
    ({"tools": ["x"], "timeoutSeconds": 0}, "spec.approval.timeoutSeconds"),
    ({"tools": ["x"], "onTimeout": "approve"}, "spec.approval.onTimeout"),
    ({"tools": ["x"], "approvers": ["alice"]}, "spec.approval.approvers[0]"),
    ({"tools": ["x"], "approvers": ["key:1,key:2"]}, "spec.approval.approvers[0]"),
])
def test_a_bad_field_is_refused_with_its_path(approval, named):
    assert named in refusal(approval)


def test_an_approval_reaches_the_chart_values_as_validated():
    resource = agent(mcp=["files"], access=["worker"],
                     approval={"tools": ["mcp:files", "peer:worker", "deploy"], "onTimeout": "proceed"})
    observed = observed_of(modelapi(), mcpserver("files"), agent("worker"))
    values = plan(resource, observed, SETTINGS, endpoint_of).values
    assert values["approval"] == {"tools": ["mcp:files", "peer:worker", "deploy"], "fromAnnotations": False,
                                  "timeoutSeconds": 600, "onTimeout": "proceed"}


def test_no_approval_is_no_values():
    assert "approval" not in plan(agent(), observed_of(modelapi()), SETTINGS, endpoint_of).values


@pytest.mark.parametrize("entry, fix", [
    ("mcp:filesystem", "spec.mcpServers: files"),
    ("peer:builder", "agentNetwork.access: worker"),
])
def test_an_entry_naming_a_server_or_peer_the_agent_lacks_fails_the_plan(entry, fix):
    resource = agent(mcp=["files"], access=["worker"], approval={"tools": [entry]})
    result = plan(resource, observed_of(modelapi(), mcpserver("files"), agent("worker")), SETTINGS, endpoint_of)
    assert result.phase == "Failed" and result.values is None
    assert f"spec.approval.tools: {entry!r}" in result.message and fix in result.message


def test_any_peer_is_a_peer_of_every_agent_with_peers():
    resource = agent(access=["worker"], approval={"tools": ["peer:*"]})
    result = plan(resource, observed_of(modelapi(), agent("worker")), SETTINGS, endpoint_of)
    assert result.phase == "Deploy", result.message


def test_a_peer_reached_by_url_may_be_named_by_its_card():
    resource = agent(access=["https://agents.example.com/travel"], approval={"tools": ["peer:travel-agent"]})
    result = plan(resource, observed_of(modelapi()), SETTINGS, endpoint_of)
    assert result.phase == "Deploy", result.message


def test_the_runtimes_defaults_are_the_crds():
    """The chart leaves the timeout and onTimeout to the runtime when its values do not set them."""
    schema = crds.load_schemas(SETTINGS.crd_dir)["Agent"]["properties"]["spec"]["properties"]["approval"]["properties"]
    runtime = ApprovalSettings()
    assert (runtime.timeout_seconds, runtime.on_timeout, runtime.from_annotations, runtime.required) == (
        schema["timeoutSeconds"]["default"], schema["onTimeout"]["default"], schema["fromAnnotations"]["default"],
        tuple(schema["tools"]["default"]))


KEYS = {"apiKeys": {"secretKeyRef": {"name": "ops-keys", "key": "keys"}}}


def test_approvers_reach_the_chart_values_and_need_authentication():
    approvers = ["key:2", "key:3 via key:1"]
    assert validated({"tools": ["x"], "approvers": approvers})["approvers"] == approvers
    guarded = plan(agent(approval={"tools": ["deploy"], "approvers": approvers}, auth=KEYS),
                   observed_of(modelapi()), SETTINGS, endpoint_of)
    assert guarded.phase == "Deploy" and guarded.values["approval"]["approvers"] == approvers
    open_ = plan(agent(approval={"tools": ["deploy"], "approvers": approvers}), observed_of(modelapi()), SETTINGS,
                 endpoint_of)
    assert open_.phase == "Failed" and open_.values is None
    assert "spec.approval.approvers names principals, but this Agent has no authentication" in open_.message
