"""Behaviours upstream KAOS users rely on (issue 12, point 5), against real runtime processes:
an MCP server named by its base URL, a plain GET on /mcp answering at once, a prompt stop on
SIGTERM while a client holds a request open, and readiness that includes loading litellm."""

from __future__ import annotations

import signal
import socket
import threading
import time

import httpx
import pytest

from kaos_runtime.core.settings import AgentSettings, ServerSettings, mcp_url
from tests.support.polling import wait_until
from tests.support.processes import wait_for_exit, wait_until_ok

from .conftest import agent_env

TOOLS = '''
def shout(message: str) -> str:
    """Upper-case a message."""
    return message.upper()
'''


@pytest.fixture(scope="module")
def tools_server(start):
    return start("mcp", "compat-tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.mark.parametrize("given, used", [
    ("http://mcpserver-echo:8000", "http://mcpserver-echo:8000/mcp"),
    ("http://mcpserver-echo:8000/", "http://mcpserver-echo:8000/mcp"),
    ("http://127.0.0.1:9001/mcp", "http://127.0.0.1:9001/mcp"),
    ("http://gateway/ns/mcp/echo/mcp", "http://gateway/ns/mcp/echo/mcp"),
    ("http://h:1/custom/path", "http://h:1/custom/path"),
])
def test_mcp_url_without_a_path_gets_mcp_appended(given, used):
    assert mcp_url(given) == used
    config = AgentSettings.from_env({"MCP_SERVERS": "echo", "MCP_SERVER_ECHO_URL": given})
    assert config.mcp_servers[0].url == used


def test_agent_uses_tools_of_a_server_named_by_its_base_url(start, tools_server):
    agent = start("agent", "compat-base-url", agent_env(
        "compat-base-url", MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=tools_server.url,
        DEBUG_MOCK_RESPONSES=['```tool_call\n{"tool": "shout", "arguments": {"message": "hi"}}\n```', "done"],
    ))
    skills = httpx.get(agent.url + "/.well-known/agent.json", timeout=10).json()["skills"]
    assert [skill["name"] for skill in skills] == ["shout"]
    body = {"model": "x", "messages": [{"role": "user", "content": "go"}]}
    assert httpx.post(agent.url + "/v1/chat/completions", json=body, timeout=30).status_code == 200
    results = httpx.get(agent.url + "/memory/events", params={"event_type": "tool_result"}, timeout=10).json()
    assert "HI" in str(results["events"])


def test_plain_get_on_mcp_answers_at_once(tools_server):
    started = time.monotonic()
    plain = httpx.get(tools_server.url + "/mcp", timeout=5)  # Accept: */*, as curl and upstream's e2e send
    assert plain.status_code == 406, plain.text
    sse = httpx.get(tools_server.url + "/mcp", headers={"Accept": "text/event-stream"}, timeout=5)
    assert sse.status_code == 405 and "POST" in sse.headers["allow"]
    assert time.monotonic() - started < 5
    # POSTs (what MCP clients send) are untouched: the test above listed and called tools.


class SilentModel:
    """A loopback socket that accepts connections and never answers: a model call that hangs."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def close(self) -> None:
        self.socket.close()


@pytest.mark.parametrize("stream", [True, False])
def test_sigterm_stops_promptly_while_a_client_holds_a_request_open(start, stream):
    model = SilentModel()
    grace = 1.0
    agent = start("agent", f"compat-sigterm-{stream}", {
        **agent_env("compat-sigterm"), "MODEL_API_URL": model.url, "MODEL_PRELOAD": "false",
        "MODEL_TIMEOUT_SECONDS": "0", "SHUTDOWN_GRACE_SECONDS": str(grace),
    })
    outcome: list = []

    def client() -> None:
        body = {"model": "x", "stream": stream, "messages": [{"role": "user", "content": "wait"}]}
        try:
            with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body, timeout=60) as response:
                outcome.append(response.read())
        except httpx.HTTPError as error:
            outcome.append(error)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    # The request is in the agent (its model call hangs) once the user message is recorded.
    wait_until(lambda: httpx.get(agent.url + "/memory/events", timeout=5).json()["total"] > 0, 30,
               what="the request to reach the agent")
    started = time.monotonic()
    agent.process.send_signal(signal.SIGTERM)
    wait_for_exit(agent, timeout=grace + 10)
    assert time.monotonic() - started < grace + 8
    thread.join(10)
    assert outcome, "the client is still waiting"
    model.close()


def test_shutdown_grace_setting():
    assert ServerSettings.from_env({}).shutdown_grace == 5.0
    assert ServerSettings.from_env({"SHUTDOWN_GRACE_SECONDS": "0.5"}).shutdown_grace == 0.5
    with pytest.raises(ValueError, match="SHUTDOWN_GRACE_SECONDS"):
        ServerSettings.from_env({"SHUTDOWN_GRACE_SECONDS": "-1"})


@pytest.mark.parametrize("env, preload", [
    ({}, False),  # no model configured
    ({"MODEL_API_URL": "http://m"}, True),
    ({"MODEL_API_URL": "http://m", "DEBUG_MOCK_RESPONSES": '["hi"]'}, False),  # scripted: litellm may never be needed
    ({"MODEL_API_URL": "http://m", "MODEL_PRELOAD": "false"}, False),
    ({"MODEL_PRELOAD": "true"}, True),
    ({"MODEL_PRELOAD": "Auto", "MODEL_API_URL": "http://m"}, True),
])
def test_preload_defaults_to_auto(env, preload):
    assert AgentSettings.from_env(env).preload is preload


def test_ready_means_litellm_is_loaded(start, mock_model):
    agent = start("agent", "compat-ready", agent_env("compat-ready", mock_model), ready=False)
    wait_until_ok(agent, "/health")
    wait_until_ok(agent, "/ready", timeout=60)
    assert httpx.get(agent.url + "/ready", timeout=5).json()["model_client_loaded"] is True
