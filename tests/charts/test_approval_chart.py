"""The agent chart's ``approval`` values -> TOOL_APPROVAL_* env vars, rendered only when something is
gated, from an Agent's spec.approval through the plan to the Deployment."""

from kaos.reconcile import plan
from kaos.settings import Settings
from kaos_runtime.core.settings import ApprovalSettings
from tests.charts.rendering import container, env_of, render, render_error
from tests.reconcile.builders import agent, endpoint_of, mcpserver, modelapi
from tests.reconcile.test_plan import observed_of

BASE = {"name": "ops", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}


def approval_env(values: dict) -> dict:
    env = env_of(container(render("agent", {**BASE, **values})))
    return {name: value for name, value in env.items() if name.startswith("TOOL_APPROVAL_")}


def test_no_approval_renders_no_variable():
    assert approval_env({}) == {}
    assert approval_env({"approval": {"tools": [], "fromAnnotations": False, "timeoutSeconds": 30}}) == {}


def test_the_tools_joined_with_commas_and_every_setting():
    env = approval_env({"approval": {"tools": ["delete_file", "mcp:files", "peer:worker", "*"],
                                     "fromAnnotations": False, "timeoutSeconds": 90, "onTimeout": "proceed"}})
    assert env == {"TOOL_APPROVAL_REQUIRED": "delete_file,mcp:files,peer:worker,*",
                   "TOOL_APPROVAL_FROM_ANNOTATIONS": "false", "TOOL_APPROVAL_TIMEOUT_SECONDS": "90",
                   "TOOL_APPROVAL_ON_TIMEOUT": "proceed"}


def test_annotations_alone_leave_the_timeout_to_the_runtime_when_unset():
    assert approval_env({"approval": {"fromAnnotations": True}}) == {"TOOL_APPROVAL_FROM_ANNOTATIONS": "true"}


def test_a_users_env_wins():
    env = approval_env({"approval": {"tools": ["x"]}, "env": [{"name": "TOOL_APPROVAL_REQUIRED", "value": "y"}]})
    assert env["TOOL_APPROVAL_REQUIRED"] == "y"


def test_an_agent_resource_renders_the_crd_defaults_and_the_runtime_reads_them():
    resource = agent(mcp=["files"], access=["worker"],
                     approval={"tools": ["mcp:files", "peer:*", "delete_file"], "onTimeout": "proceed"})
    observed = observed_of(modelapi(), mcpserver("files"), agent("worker"))
    env = approval_env(plan(resource, observed, Settings(), endpoint_of).values)
    assert env == {"TOOL_APPROVAL_REQUIRED": "mcp:files,peer:*,delete_file", "TOOL_APPROVAL_FROM_ANNOTATIONS": "false",
                   "TOOL_APPROVAL_TIMEOUT_SECONDS": "600", "TOOL_APPROVAL_ON_TIMEOUT": "proceed"}
    runtime = ApprovalSettings.from_env(env)
    assert (runtime.required, runtime.from_annotations, runtime.timeout_seconds, runtime.on_timeout) == (
        ("mcp:files", "peer:*", "delete_file"), False, 600, "proceed")


def test_the_schema_refuses_a_bad_approval_by_name():
    for approval, named in (({"tools": ["two words"]}, "tools"), ({"timeoutSeconds": 0}, "timeoutSeconds"),
                            ({"onTimeout": "wait"}, "onTimeout"), ({"approver": "me"}, "approver")):
        message = render_error("agent", {**BASE, "approval": approval})
        assert "schema" in message and named in message, message


def test_approvers_joined_with_commas_from_an_agent_resource_to_the_runtime():
    approvers = ["key:2", "key:3 via key:1", "user:alice@example.com via key:1"]
    resource = agent(mcp=["files"], approval={"tools": ["delete_file"], "approvers": approvers},
                     auth={"apiKeys": {"secretKeyRef": {"name": "keys", "key": "keys"}}})
    env = approval_env(plan(resource, observed_of(modelapi(), mcpserver("files")), Settings(), endpoint_of).values)
    assert env["TOOL_APPROVAL_APPROVERS"] == "key:2,key:3 via key:1,user:alice@example.com via key:1"
    assert ApprovalSettings.from_env(env).approvers == tuple(approvers)
    assert "TOOL_APPROVAL_APPROVERS" not in approval_env({"approval": {"tools": ["x"], "approvers": []}})
    message = render_error("agent", {**BASE, "approval": {"tools": ["x"], "approvers": ["alice"]}})
    assert "schema" in message and "approvers" in message, message
