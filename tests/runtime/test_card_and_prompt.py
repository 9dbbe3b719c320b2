"""What an agent tells about itself: its card (service.routes.discovery.agent_card), the public URL the cards
name (public_url) and its system prompt (prompts)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from kaos_runtime.core.settings import AgentSettings
from kaos_runtime.loop.prompts import system_prompt
from kaos_runtime.protocols.public_url import public_base_url
from kaos_runtime.service.routes.discovery import agent_card


def test_card_capabilities():
    config = AgentSettings.from_env({"AGENT_NAME": "c", "PEER_AGENTS": "w", "PEER_AGENT_W_CARD_URL": "http://w/.well-known/agent"})
    card = agent_card(config, "http://c", [])
    assert card["capabilities"] == ["message_processing", "task_execution", "task_delegation"]


def request(headers: dict) -> Request:
    """A request that reached the agent at 127.0.0.1:8123, as a proxy (or the local gateway) sends it."""
    return Request({"type": "http", "scheme": "http", "server": ("127.0.0.1", 8123), "path": "/.well-known/agent",
                    "query_string": b"", "method": "GET",
                    "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8123", **headers}.items()]})


@pytest.mark.parametrize("headers, expected", [
    ({}, "http://127.0.0.1:8123"),
    ({"X-Forwarded-Proto": "https", "X-Forwarded-Host": "kaos.example.com",
      "X-Forwarded-Prefix": "/team/agent/a"}, "https://kaos.example.com/team/agent/a"),
    ({"X-Forwarded-Host": "127.0.0.1:8080", "X-Forwarded-Prefix": "/team/agent/a/"}, "http://127.0.0.1:8080/team/agent/a"),
    ({"X-Forwarded-Prefix": "/team/agent/a"}, "http://127.0.0.1:8123/team/agent/a"),  # a cluster: Host is kept
    # a chain of proxies: the first entry is what the client used
    ({"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "edge.example.com, inner:80"}, "https://edge.example.com"),
    ({"X-Forwarded-Host": "[::1]:8080"}, "http://[::1]:8080"),
    # malformed values are ignored, each on its own
    ({"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example/path", "X-Forwarded-Prefix": "//evil"},
     "http://127.0.0.1:8123"),
    ({"X-Forwarded-Host": "user@evil.example", "X-Forwarded-Prefix": "team"}, "http://127.0.0.1:8123"),
    ({"X-Forwarded-Prefix": "/a b"}, "http://127.0.0.1:8123"),
])
def test_the_public_base_url_follows_the_forwarded_headers(headers, expected):
    assert public_base_url(request(headers)) == expected


def test_prompt_holds_instructions_tools_and_peers():
    prompt = system_prompt("Be brief.", [{"name": "echo", "description": "Echo", "inputSchema": {}}],
                           [{"name": "w", "description": "Worker"}])
    assert "Be brief." in prompt and "```tool_call" in prompt and "- w: Worker" in prompt
