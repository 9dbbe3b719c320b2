"""Bearer authentication of the python-string MCP server (`kaos-runtime mcp` with AUTH_*), on
real processes: /health open, 401 with WWW-Authenticate for a missing or wrong token, API keys
and OIDC JWTs accepted, and an agent that sends its token (MCP_SERVER_<NAME>_TOKEN) using the
tools while one without it is refused; no planted secret in any log or memory event."""

from __future__ import annotations

import asyncio
import pathlib
import secrets

import httpx
import pytest

from .conftest import agent_env, chat, events
from .test_auth import AUDIENCE, ISSUER, bearer, issuer  # noqa: F401 (issuer: the module's own JWKS server)
from .test_tools_and_limits import tool_block

TOOL_KEY = f"kaos-mcp-{secrets.token_hex(12)}"
OTHER_KEY = f"kaos-mcp-other-{secrets.token_hex(12)}"
PLANTED = [TOOL_KEY, OTHER_KEY]
TOOLS = '''
def shout(message: str) -> str:
    """Upper-case a message."""
    return message.upper()
'''
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def guarded_tools(start, issuer):  # noqa: F811 (the fixture)
    return start("mcp", "guarded-tools", {
        "MCP_TOOLS_STRING": TOOLS, "AUTH_API_KEYS": f"{TOOL_KEY}\n{OTHER_KEY}",
        "AUTH_OIDC_JWKS_URL": issuer.url, "AUTH_OIDC_ISSUER": ISSUER, "AUTH_OIDC_AUDIENCE": AUDIENCE,
    })


def initialize(server, headers=None) -> httpx.Response:
    return httpx.post(server.url + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **(headers or {})}, timeout=10)


def test_health_is_open_and_lists_the_tools(guarded_tools):
    health = httpx.get(guarded_tools.url + "/health")
    assert health.status_code == 200 and health.json()["tools"] == ["shout"]


def test_the_mcp_endpoint_refuses_a_missing_or_wrong_token(guarded_tools):
    missing = initialize(guarded_tools)
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"] == 'Bearer realm="kaos"'
    for headers in (bearer("not-a-key"), {"Authorization": f"Basic {TOOL_KEY}"}, bearer(TOOL_KEY[:-1])):
        refused = initialize(guarded_tools, headers)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith('Bearer realm="kaos"')
    assert 'error="invalid_token"' in initialize(guarded_tools, bearer("not-a-key")).headers["WWW-Authenticate"]
    assert httpx.get(guarded_tools.url + "/mcp", headers={"Accept": "text/event-stream"}).status_code == 401


def test_keys_and_jwts_are_served(guarded_tools, issuer):  # noqa: F811 (the fixture)
    for token in (TOOL_KEY, OTHER_KEY, issuer.token()):
        answer = initialize(guarded_tools, bearer(token))
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["serverInfo"]["name"] == "kaos-python-string"
    expired = initialize(guarded_tools, bearer(issuer.token(exp=0)))
    assert expired.status_code == 401 and "expired" in expired.headers["WWW-Authenticate"]


def test_the_mcp_client_with_the_key_lists_and_calls_tools(guarded_tools):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def use() -> tuple[list[str], str]:
        async with create_mcp_http_client(headers=bearer(TOOL_KEY)) as http, \
                Client(streamable_http_client(guarded_tools.url + "/mcp", http_client=http)) as client:
            tools = await client.list_tools()
            result = await client.call_tool("shout", {"message": "hi"})
            return [tool.name for tool in tools.tools], result.content[0].text

    assert asyncio.run(use()) == (["shout"], "HI")


@pytest.fixture(scope="module")
def credentialed_agent(start, mock_model, guarded_tools):
    return start("agent", "mcp-cred", agent_env(
        "mcp-cred", mock_model, MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=guarded_tools.url + "/mcp",
        MCP_SERVER_TOOLS_TOKEN=TOOL_KEY))


def test_an_agent_with_its_token_uses_the_tools(credentialed_agent, mock_model):
    skills = httpx.get(credentialed_agent.url + "/.well-known/agent").json()["skills"]
    assert [skill["name"] for skill in skills] == ["shout"]  # discovered through the guard
    mock_model.reset()
    mock_model.script(tool_block("shout", '{"message": "quiet"}'), "Done.")
    assert chat(credentialed_agent, "shout it", session_id="mcp-cred").status_code == 200
    result = events(credentialed_agent, session_id="mcp-cred", event_type="tool_result")["events"][0]["content"]
    assert result == {"tool": "shout", "result": "QUIET"}


def test_an_agent_without_a_token_is_refused_with_401(start, mock_model, guarded_tools):
    agent = start("agent", "mcp-nocred", agent_env(
        "mcp-nocred", mock_model, MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=guarded_tools.url + "/mcp"))
    mock_model.reset()
    mock_model.script(tool_block("shout", '{"message": "quiet"}'))  # then the echo of the failure
    reply = chat(agent, "shout it", session_id="mcp-nocred")
    content = reply.json()["choices"][0]["message"]["content"]
    assert reply.status_code == 200 and "Tool shout failed" in content
    assert "HTTP 401 Unauthorized" in content and "sends none" in content, content
    assert events(agent, session_id="mcp-nocred", event_type="error")["total"] == 1


def test_no_planted_key_in_logs_or_memory(guarded_tools, credentialed_agent, log_dir):
    # Runs after the traffic above (module order).
    texts = [path.read_text(errors="replace") for path in pathlib.Path(log_dir).glob("*.log")]
    texts.append(httpx.get(credentialed_agent.url + "/memory/events", params={"limit": 1000}).text)
    texts.append(httpx.get(credentialed_agent.url + "/.well-known/agent").text)
    assert any("shout" in text for text in texts)
    for text in texts:
        for secret in PLANTED:
            assert secret not in text


def test_settings_read_each_servers_token_and_keep_it_out_of_repr():
    from kaos_runtime.core.settings import AgentSettings, McpServerSettings

    settings = AgentSettings.from_env({"MCP_SERVERS": "my-tools,open", "MCP_SERVER_MY_TOOLS_URL": "http://t:8000",
                                       "MCP_SERVER_MY_TOOLS_TOKEN": TOOL_KEY, "MCP_SERVER_OPEN_URL": "http://o/mcp"})
    guarded, open_server = settings.mcp_servers
    assert (guarded.url, guarded.token, open_server.token) == ("http://t:8000/mcp", TOOL_KEY, "")
    assert TOOL_KEY not in repr(settings)
    server = McpServerSettings.from_env({"AUTH_API_KEYS": f"{TOOL_KEY},{OTHER_KEY}"})
    assert [name for name, _ in server.auth.api_keys()] == ["1", "2"] and TOOL_KEY not in repr(server)
