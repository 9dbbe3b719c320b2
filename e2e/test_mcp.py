"""MCP tools: python-string servers through the gateway, tool discovery and tool calls by agents."""

import time

import httpx
import pytest
from mcp import Client

from e2e.conftest import (
    chat,
    create_agent_resource,
    create_mcpserver_resource,
    deploy_and_wait,
    fenced,
    gateway_url,
    get_custom_resource,
    memory_events,
    wait_for_status,
)
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

TEXT_TOOLS = '''
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message

def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''

MATH_TOOLS = '''
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b
'''


@pytest.fixture(scope="module")
def text_tools(test_namespace) -> str:
    deploy_and_wait(create_mcpserver_resource(test_namespace, "text-tools", TEXT_TOOLS), test_namespace)
    wait_for_status("MCPServer", "text-tools", test_namespace)
    return "text-tools"


@pytest.fixture(scope="module")
def math_tools(test_namespace) -> str:
    deploy_and_wait(create_mcpserver_resource(test_namespace, "math-tools", MATH_TOOLS), test_namespace)
    wait_for_status("MCPServer", "math-tools", test_namespace)
    return "math-tools"


async def test_mcp_server_reachable_through_gateway(test_namespace, text_tools):
    url = gateway_url(test_namespace, "mcp", text_tools) + "/mcp"
    async with Client(url) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 2, "b": 40})
    assert {tool.name for tool in tools.tools} == {"echo", "add"}
    assert "42" in "".join(getattr(part, "text", "") for part in result.content)


def test_mcp_server_status_lists_its_tools(test_namespace, text_tools):
    def tools_listed():
        resource = get_custom_resource("MCPServer", text_tools, test_namespace)
        return ((resource or {}).get("status") or {}).get("tools")

    assert wait_until(tools_listed, 30, interval=0.2, what="status.tools") == ["add", "echo"]


async def test_agent_card_lists_tools(test_namespace, shared_modelapi, text_tools):
    url = deploy_and_wait(create_agent_resource(test_namespace, "tool-card", shared_modelapi,
                                                mcp_servers=[text_tools]), test_namespace)
    async with httpx.AsyncClient(timeout=30) as client:
        card = (await client.get(f"{url}/.well-known/agent")).json()
    assert {"echo", "add"} <= {skill["name"] for skill in card["skills"]}
    assert "tool_execution" in card["capabilities"]


async def test_tool_call_is_recorded_with_its_result(test_namespace, shared_modelapi, text_tools):
    marker = f"tool-marker-{int(time.time())}"
    replies = [fenced("tool_call", {"tool": "echo", "arguments": {"message": marker}}), "The tool answered."]
    url = deploy_and_wait(create_agent_resource(test_namespace, "tool-caller", shared_modelapi,
                                                mcp_servers=[text_tools], mock_responses=replies), test_namespace)
    response = await chat(url, "Echo the marker, please.")
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "The tool answered."
    events = (await memory_events(url))["events"]
    calls = [e for e in events if e["event_type"] == "tool_call"]
    results = [e for e in events if e["event_type"] == "tool_result"]
    assert calls and "echo" in str(calls[-1]["content"])
    assert results and marker in str(results[-1]["content"])


async def test_agent_with_two_mcp_servers(test_namespace, shared_modelapi, text_tools, math_tools):
    replies = [fenced("tool_call", {"tool": "multiply", "arguments": {"a": 6, "b": 7}}),
               fenced("tool_call", {"tool": "add", "arguments": {"a": 1, "b": 2}}),
               "Both tools answered."]
    url = deploy_and_wait(create_agent_resource(test_namespace, "two-servers", shared_modelapi,
                                                mcp_servers=[text_tools, math_tools], mock_responses=replies),
                          test_namespace)
    async with httpx.AsyncClient(timeout=30) as client:
        card = (await client.get(f"{url}/.well-known/agent")).json()
    assert {"echo", "add", "multiply"} <= {skill["name"] for skill in card["skills"]}
    response = await chat(url, "Multiply, then add.")
    assert response.status_code == 200, response.text
    results = [str(e["content"]) for e in (await memory_events(url, event_type="tool_result"))["events"]]
    assert any("multiply" in r and "42" in r for r in results), results
    assert any("add" in r and "3" in r for r in results), results
