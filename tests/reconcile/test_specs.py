"""The typed views of Agents, ModelAPIs and MCPServers (kaos.reconcile.specs): each rule on a field
decided in one place, and the approval-entry grammar the runtime and the control side share."""

import re

import pytest

from kaos import crds
from kaos.reconcile import endpoint, plan
from kaos.reconcile.approval_entries import approval_entry as control_approval_entry
from kaos.reconcile.specs import agent_spec, exposed, mcpserver_spec, modelapi_spec
from kaos.settings import Settings
from kaos_runtime.approvals.policy import ApprovalPolicy
from kaos_runtime.core.approval_entries import approval_entry as runtime_approval_entry
from kaos_runtime.core.settings import ApprovalSettings
from tests.reconcile.builders import SPEC_SCHEMAS, agent, endpoint_of, mcpserver, modelapi

from .test_plan import observed_of

SETTINGS = Settings()
ENTRIES = ["delete_file", "*", "fs.write", "mcp:files", "peer:worker", "peer:*", "peer:Travel-Agent",
           "mcp:", "peer: ", "x:y", "two words"]


def test_an_agents_view_carries_its_network_approval_auth_and_memory():
    view = agent_spec(agent(access=["worker", "https://a2a.example/agent", "worker"], mcp=["files"],
                            approval={"tools": ["mcp:files", "peer:worker", "delete_file"], "approvers": ["key:1"]},
                            auth={"apiKeys": {"name": "keys", "key": "keys"}},
                            memory={"backend": "redis", "store": "notes"}))
    assert view.network.expose and view.network.peers == ("worker",)
    assert view.network.a2a_urls == ("https://a2a.example/agent",)
    assert view.approval.targets == (("mcp", "files"), ("peer", "worker"))
    assert view.approval.approvers == ("key:1",) and view.auth.guarded and not view.auth.oidc
    assert (view.memory.backend, view.memory.store, view.memory.remembers) == ("redis", "notes", True)
    assert (view.model, view.model_id, view.names_model) == ("ollama/smollm2:135m", "ollama/smollm2:135m", True)


def test_a_modelapis_and_an_mcpservers_view():
    hosted = modelapi_spec(modelapi(mode="Hosted"))
    assert hosted.hosted and hosted.hosted_model == "smollm2:135m" and hosted.engine(SETTINGS) == "llamacpp"
    server = mcpserver_spec(mcpserver(identity="forward"))
    assert (server.runtime, server.url, server.identity) == ("python-string", "", "forward")


def test_exposed_is_the_one_decision_the_endpoint_and_the_peer_check_use():
    hidden = agent("worker", agentNetwork={"access": [], "expose": False})
    assert not exposed(hidden) and exposed(agent("worker")) and exposed(modelapi()) and exposed(mcpserver())
    assert endpoint(hidden, SETTINGS, endpoint_of) == ""
    delegating = plan(agent(access=["worker"]), observed_of(modelapi(), hidden), SETTINGS, endpoint_of)
    assert delegating.phase == "Failed" and "peer 'worker' sets agentNetwork.expose: false" in delegating.message


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_control_side_reads_an_approval_entry_as_the_runtime_does(entry):
    def read(parse):
        try:
            return parse(entry)
        except ValueError as error:
            return f"refused: {error}"

    assert read(control_approval_entry) == read(runtime_approval_entry)


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_crd_pattern_admits_what_the_grammar_admits(entry):
    """The CRD's pattern is stricter (an MCPServer's name is a DNS label), never looser."""
    pattern = SPEC_SCHEMAS["Agent"]["properties"]["approval"]["properties"]["tools"]["items"]["pattern"]
    if re.search(pattern, entry):
        runtime_approval_entry(entry)


def test_a_plan_refuses_an_approval_entry_the_runtime_would_refuse():
    """A resource the API server did not check (the CRD's pattern refuses it there) is Failed with the
    runtime's reason, not deployed to an agent that would not start."""
    unchecked = agent(approval=crds.apply_defaults(SPEC_SCHEMAS["Agent"]["properties"]["approval"],
                                                   {"tools": ["x:y"]}))
    planned = plan(unchecked, observed_of(modelapi()), SETTINGS, endpoint_of)
    assert planned.phase == "Failed"
    assert "spec.approval.tools: 'x:y' is not a tool name, *, mcp:<server> or peer:<agent>" in planned.message


def test_the_runtime_checks_entries_given_as_a_list_too():
    with pytest.raises(ValueError, match="'mcp:' needs a name after mcp:"):
        ApprovalSettings(required=("mcp:",))
    policy = ApprovalPolicy.from_settings(ApprovalSettings(required=("mcp:files", "peer:*", "*", "delete")))
    assert (policy.servers, policy.every_peer, policy.every_tool, policy.tools) == (
        {"files"}, True, True, {"delete"})
