"""Approvals when the agent is an MCP tool, with the official mcp client against a real agent: a
client that answers elicitations is asked (the stateless multi-round-trip flow, the client
retrying the call with the decision); a client that does not waits, as a chat completion does,
until the call is decided through POST /approvals/{id}."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from mcp.types import ElicitResult

from kaos_runtime.protocols.agent_mcp import tool_name
from tests.support.polling import eventually

from .approval_support import approvals, call, decide, gated_env, native, tool_messages
from .conftest import events


@pytest.fixture(scope="module")
def agent(start, mock_model, approval_tools):
    return start("agent", "mcp-gated", gated_env("mcp-gated", mock_model, approval_tools))


pytestmark = pytest.mark.usefixtures("clean_model")


async def test_a_client_that_answers_elicitations_is_asked(agent, mock_model):
    mock_model.script(native(call("delete_file", path="/mcp/one")), "Deleted, as asked.")
    asked = []

    async def answer(context, params):
        asked.append(params)
        return ElicitResult(action="accept", content={"decision": "approve", "reason": "asked and agreed"})

    async with Client(agent.url + "/mcp", elicitation_callback=answer) as client:
        result = await client.call_tool(tool_name("mcp-gated"), {"message": "delete /mcp/one"})
    assert not result.is_error, result
    assert result.structured_content["answer"] == "Deleted, as asked."
    [question] = asked
    assert "delete_file" in question.message and "/mcp/one" in question.message
    assert tool_messages(mock_model.requests()[-1]) == ["deleted /mcp/one"]
    session = result.structured_content["session_id"]
    [granted] = [e["content"] for e in events(agent, session_id=session)["events"]
                 if e["event_type"] == "approval_granted"]
    assert granted["reason"] == "asked and agreed"


async def test_a_declined_elicitation_rejects_the_call(agent, mock_model):
    mock_model.script(native(call("delete_file", path="/mcp/two")), "Left it alone.")

    async def decline(context, params):
        return ElicitResult(action="decline")

    async with Client(agent.url + "/mcp", elicitation_callback=decline) as client:
        result = await client.call_tool(tool_name("mcp-gated"), {"message": "delete /mcp/two"})
    assert result.structured_content["answer"] == "Left it alone."
    [refused] = tool_messages(mock_model.requests()[-1])
    assert "not run" in refused and "decline" in refused


async def test_a_client_without_elicitation_waits_for_post_approvals(agent, mock_model):
    mock_model.script(native(call("delete_file", path="/mcp/three")), "Done after the wait.")
    async with Client(agent.url + "/mcp") as client:
        call_ = asyncio.ensure_future(client.call_tool(tool_name("mcp-gated"), {"message": "delete /mcp/three"}))
        [approval] = await eventually(lambda: asyncio.to_thread(approvals, agent), 30, what="a pending approval")
        assert not call_.done()
        assert (await asyncio.to_thread(decide, agent, approval["id"], "approve")).status_code == 200
        result = await asyncio.wait_for(call_, 60)
    assert result.structured_content["answer"] == "Done after the wait."
