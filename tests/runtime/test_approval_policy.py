"""The approval policy of ``TOOL_APPROVAL_*`` (pure), and one approval as the API shows it."""

from __future__ import annotations

import pytest

from kaos_runtime.approvals import Approval, ApprovalPolicy
from kaos_runtime.approvals.policy import destructive
from kaos_runtime.core.settings import ApprovalSettings, ConfigError


def policy(**env) -> ApprovalPolicy:
    return ApprovalPolicy.from_settings(ApprovalSettings.from_env(env))


def test_nothing_set_gates_nothing():
    assert not policy().enabled
    assert not policy().gates_tool("delete_file", "fs", {"destructiveHint": True})


def test_names_servers_peers_and_stars():
    gated = policy(TOOL_APPROVAL_REQUIRED=" delete_file , mcp:fs,peer:worker")
    assert gated.gates_tool("delete_file", "other", None)
    assert gated.gates_tool("read_file", "fs", None) and not gated.gates_tool("read_file", "other", None)
    assert gated.gates_peer("worker") and not gated.gates_peer("helper")
    every = policy(TOOL_APPROVAL_REQUIRED="*")
    assert every.gates_tool("anything", None, None) and not every.gates_peer("worker")
    assert policy(TOOL_APPROVAL_REQUIRED="peer:*").gates_peer("anyone")


def test_annotations_gate_only_explicitly_destructive_tools():
    assert destructive({"destructiveHint": True})
    assert not destructive({"destructiveHint": True, "readOnlyHint": True})
    assert not destructive({}) and not destructive(None) and not destructive({"destructiveHint": False})
    by_hints = policy(TOOL_APPROVAL_FROM_ANNOTATIONS="true")
    assert by_hints.enabled and by_hints.gates_tool("rm", None, {"destructiveHint": True})
    assert not by_hints.gates_tool("ls", None, {"readOnlyHint": True})


def test_timeout_rule_and_defaults():
    assert policy().timeout_seconds == 600 and not policy().proceed_on_timeout
    assert policy(TOOL_APPROVAL_ON_TIMEOUT=" Proceed ", TOOL_APPROVAL_TIMEOUT_SECONDS="5").proceed_on_timeout


@pytest.mark.parametrize("env, message", [
    ({"TOOL_APPROVAL_REQUIRED": "mcp:"}, "'mcp:' needs a name after mcp:"),
    ({"TOOL_APPROVAL_REQUIRED": "peer: "}, "needs a name after peer:"),
    ({"TOOL_APPROVAL_REQUIRED": "x:y"}, "'x:y' is not a tool name"),
    ({"TOOL_APPROVAL_REQUIRED": "two words"}, "holds white space"),
    ({"TOOL_APPROVAL_TIMEOUT_SECONDS": "0"}, "TOOL_APPROVAL_TIMEOUT_SECONDS must be at least 1, got '0'"),
    ({"TOOL_APPROVAL_TIMEOUT_SECONDS": "soon"}, "TOOL_APPROVAL_TIMEOUT_SECONDS must be an integer"),
    ({"TOOL_APPROVAL_ON_TIMEOUT": "later"}, "TOOL_APPROVAL_ON_TIMEOUT must be 'reject' or 'proceed'"),
    ({"TOOL_APPROVAL_FROM_ANNOTATIONS": "perhaps"}, "TOOL_APPROVAL_FROM_ANNOTATIONS must be true or false"),
])
def test_bad_values_are_refused_in_one_line(env, message):
    with pytest.raises(ConfigError) as refused:
        ApprovalSettings.from_env(env)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_pending_approval_past_its_time_shows_as_expired():
    approval = Approval(id="apr-1", tool="rm", arguments={"path": "/"}, session_id="s", agent="a",
                        requested_at=1000.0, expires_at=1600.0)
    assert approval.view(1599.0)["status"] == "pending"
    view = approval.view(1600.0)
    assert view["status"] == "expired"
    assert view["requested_at"] == "1970-01-01T00:16:40Z" and view["expires_at"] == "1970-01-01T00:26:40Z"
    assert Approval.from_json(approval.to_json()) == approval
    decided = approval.settled("approved", "key:1", 1200.0, "ok")
    assert decided.view(2000.0)["status"] == "approved" and decided.view(2000.0)["decided_by"] == "key:1"
