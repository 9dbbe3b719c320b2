"""The agent as an MCP server (issue 12), driven by the official ``mcp`` client (streamable HTTP)
against real runtime processes: the one tool and its schemas, a call and a continued session in
memory, errors as MCP error results, a plain GET answered at once, bearer auth on /mcp, and an
agent using another agent as a tool."""

from __future__ import annotations

import time

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from kaos_runtime.protocols.agent_mcp import tool_name
from kaos_runtime.protocols.chat_request import SESSION_ID_PATTERN

from .conftest import agent_env, events

TOOL = "ask_mcp-agent"


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "mcp-agent", agent_env("mcp-agent", mock_model, AGENT_DESCRIPTION="Answers over MCP"))


def test_tool_name_is_the_agents_and_a_valid_function_name():
    assert tool_name("mcp-agent") == TOOL
    assert tool_name("team.writer v2") == "ask_team_writer_v2"
    assert len(tool_name("x" * 100)) == 64


async def test_lists_one_tool_with_its_schemas(agent):
    async with Client(agent.url + "/mcp") as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == [TOOL]
    tool = tools[0]
    assert "mcp-agent" in tool.description and "Answers over MCP" in tool.description
    schema = tool.input_schema
    assert schema["required"] == ["message"]
    assert schema["properties"]["message"]["type"] == "string"
    assert {"type": "string", "pattern": SESSION_ID_PATTERN} in schema["properties"]["session_id"]["anyOf"]
    assert set(tool.output_schema["required"]) == {"answer", "session_id"}


async def test_call_then_continue_the_session(agent, mock_model):
    async with Client(agent.url + "/mcp") as client:
        first = await client.call_tool(TOOL, {"message": "hello over mcp"})
        assert not first.is_error, first
        assert [part.text for part in first.content] == ["echo: hello over mcp"]
        session = first.structured_content["session_id"]
        assert first.structured_content["answer"] == "echo: hello over mcp"
        second = await client.call_tool(TOOL, {"message": "second turn", "session_id": session})
    assert not second.is_error, second
    assert second.structured_content == {"answer": "echo: second turn", "session_id": session}
    recorded = events(agent, session_id=session)["events"]
    assert [(e["event_type"], e["content"]) for e in recorded] == [
        ("user_message", "hello over mcp"), ("agent_response", "echo: hello over mcp"),
        ("user_message", "second turn"), ("agent_response", "echo: second turn")]
    assert "hello over mcp" in str(mock_model.requests()[-1]["messages"])  # the second call saw the first turn


async def test_bad_arguments_are_tool_errors(agent):
    async with Client(agent.url + "/mcp") as client:
        blank = await client.call_tool(TOOL, {"message": "x", "session_id": "   "})
        missing = await client.call_tool(TOOL, {})
    assert blank.is_error and missing.is_error


def test_plain_get_on_mcp_answers_at_once(agent):
    started = time.monotonic()
    plain = httpx.get(agent.url + "/mcp", timeout=5)
    sse = httpx.get(agent.url + "/mcp", headers={"Accept": "text/event-stream"}, timeout=5)
    assert (plain.status_code, sse.status_code) == (406, 405)
    assert time.monotonic() - started < 3


async def test_mcp_needs_the_bearer_token_when_auth_is_on(start, mock_model):
    guarded = start("agent", "mcp-guarded", agent_env("mcp-guarded", mock_model, AUTH_API_KEYS="mcp-key-1"))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    refused = httpx.post(guarded.url + "/mcp", json=body, timeout=10,
                         headers={"Accept": "application/json, text/event-stream"})
    assert refused.status_code == 401 and "www-authenticate" in refused.headers
    async with httpx.AsyncClient(headers={"Authorization": "Bearer mcp-key-1"}, timeout=30) as http:
        async with Client(streamable_http_client(guarded.url + "/mcp", http_client=http)) as client:
            result = await client.call_tool("ask_mcp-guarded", {"message": "with a key"})
    assert result.structured_content["answer"] == "echo: with a key"


def test_an_agent_uses_an_agent_as_a_tool(start, agent):
    call = '```tool_call\n{"tool": "%s", "arguments": {"message": "what is up"}}\n```' % TOOL
    boss = start("agent", "mcp-boss", agent_env(
        "mcp-boss", MCP_SERVERS="helper", MCP_SERVER_HELPER_URL=agent.url + "/mcp",
        DEBUG_MOCK_RESPONSES=[call, "The helper answered."]))
    skills = httpx.get(boss.url + "/.well-known/agent.json", timeout=10).json()["skills"]
    assert [skill["name"] for skill in skills] == [TOOL]
    body = {"model": "x", "messages": [{"role": "user", "content": "ask the helper"}]}
    answer = httpx.post(boss.url + "/v1/chat/completions", json=body, timeout=60).json()
    assert answer["choices"][0]["message"]["content"] == "The helper answered."
    recorded = events(boss)["events"]
    calls = [e["content"] for e in recorded if e["event_type"] == "tool_call"]
    results = [e["content"] for e in recorded if e["event_type"] == "tool_result"]
    assert calls == [{"tool": TOOL, "arguments": {"message": "what is up"}}]
    assert results == [{"tool": TOOL, "result": "echo: what is up"}]
    helper = [e["content"] for e in events(agent, event_type="user_message")["events"]]
    assert "what is up" in helper
