"""Agents as MCP tools (issue 12): an agent's /mcp through the gateway, an MCPServer of kind
external (spec.url) pointing at it, and another agent calling it as a tool."""

import time

import pytest
from mcp import Client

from e2e.conftest import (
    chat,
    create_agent_resource,
    create_custom_resource,
    deploy_and_wait,
    fenced,
    gateway_url,
    memory_events,
    wait_for_status,
)
from kaos.api import API_VERSION
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

HELPER, TOOL_SERVER, BOSS = "mcp-helper", "helper-tool", "mcp-boss"
TOOL = f"ask_{HELPER}"


@pytest.fixture(scope="module")
def helper(test_namespace, shared_modelapi) -> str:
    stamp = int(time.time())
    url = deploy_and_wait(create_agent_resource(
        test_namespace, HELPER, shared_modelapi, description="Knows the answer",
        mock_responses=[f"The answer is 42 ({stamp}).", f"Still 42 ({stamp})."]), test_namespace)
    return url


@pytest.fixture(scope="module")
def helper_tool(test_namespace, helper) -> str:
    """An external MCPServer at the helper's /mcp (its endpoint, as the other agents reach it)."""
    endpoint = wait_for_status("Agent", HELPER, test_namespace)["status"]["endpoint"]
    create_custom_resource({"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": TOOL_SERVER},
                            "spec": {"runtime": "custom", "url": endpoint.rstrip("/") + "/mcp"}}, test_namespace)
    wait_for_status("MCPServer", TOOL_SERVER, test_namespace)
    return TOOL_SERVER


async def test_agent_serves_its_tool_through_the_gateway(test_namespace, helper):
    async with Client(gateway_url(test_namespace, "agent", HELPER) + "/mcp") as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == [TOOL]
    assert "Knows the answer" in tools[0].description


def test_external_mcp_server_lists_the_agents_tool(test_namespace, helper_tool):
    def tools():
        resource = wait_for_status("MCPServer", helper_tool, test_namespace)
        return resource["status"].get("tools")

    assert wait_until(tools, 60, interval=0.2, what="status.tools of the external MCPServer") == [TOOL]


async def test_an_agent_calls_another_agent_as_a_tool(test_namespace, shared_modelapi, helper, helper_tool):
    question = f"What is the answer? ({int(time.time())})"
    boss = deploy_and_wait(create_agent_resource(
        test_namespace, BOSS, shared_modelapi, mcp_servers=[helper_tool],
        mock_responses=[fenced("tool_call", {"tool": TOOL, "arguments": {"message": question}}),
                        "The helper says 42."]), test_namespace)
    response = await chat(boss, "Ask the helper.")
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "The helper says 42."
    events = (await memory_events(boss))["events"]
    calls = [e["content"] for e in events if e["event_type"] == "tool_call"]
    results = [e["content"] for e in events if e["event_type"] == "tool_result"]
    assert calls == [{"tool": TOOL, "arguments": {"message": question}}]
    assert len(results) == 1 and results[0]["tool"] == TOOL and "42" in results[0]["result"]
    helper_events = (await memory_events(helper, event_type="user_message"))["events"]
    assert question in [e["content"] for e in helper_events]
