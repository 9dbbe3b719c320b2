"""Tools over a real `kaos-runtime mcp` process, the step limit, startup errors, memory bounds."""

from __future__ import annotations

import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.processes import free_port, wait_for_exit

from .conftest import agent_env, chat, events

TOOLS = '''
import math

def _twice(value):
    return 2 * value

def double_root(value: float) -> float:
    """Twice the square root of a number."""
    return _twice(math.sqrt(value))

def shout(message: str) -> str:
    """Upper-case a message."""
    return message.upper()

def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError("exploded: " + reason)
'''


def tool_block(tool: str, arguments: str) -> str:
    return f'```tool_call\n{{"tool": "{tool}", "arguments": {arguments}}}\n```'


@pytest.fixture(scope="module")
def tools_server(start):
    return start("mcp", "tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.fixture(scope="module")
def tool_agent(start, mock_model, tools_server):
    return start("agent", "toolsy", agent_env(
        "toolsy", mock_model, MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=tools_server.url + "/mcp",
    ))


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def test_mcp_server_health_and_card_skills(tools_server, tool_agent):
    assert httpx.get(tools_server.url + "/health").json()["tools"] == ["double_root", "shout", "explode"]
    card = httpx.get(tool_agent.url + "/.well-known/agent").json()
    assert "tool_execution" in card["capabilities"]
    skills = {skill["name"]: skill for skill in card["skills"]}
    assert set(skills) == {"double_root", "shout", "explode"}
    assert skills["double_root"]["description"] == "Twice the square root of a number."
    assert skills["double_root"]["inputSchema"]["properties"]["value"]["type"] == "number"
    assert skills["shout"]["inputSchema"]["required"] == ["message"]


def test_tool_call_result_goes_back_to_the_model(tool_agent, mock_model):
    mock_model.script(tool_block("double_root", '{"value": 16}'), "The answer is 8.")
    reply = chat(tool_agent, "what is twice the root of 16?", session_id="root")
    assert reply.json()["choices"][0]["message"]["content"] == "The answer is 8."
    types = [e["event_type"] for e in events(tool_agent, session_id="root")["events"]]
    assert types == ["user_message", "tool_call", "tool_result", "agent_response"]
    result = events(tool_agent, session_id="root", event_type="tool_result")["events"][0]["content"]
    assert result == {"tool": "double_root", "result": "8.0"}
    second_call = mock_model.requests()[1]["messages"]
    assert "double_root" in second_call[0]["content"]  # the system prompt lists the tools
    assert second_call[-1]["content"] == "Result of tool double_root:\n8.0"


def test_failing_tool_is_an_error_and_the_server_keeps_serving(tool_agent, mock_model):
    mock_model.script(tool_block("explode", '{"reason": "boom"}'))
    reply = chat(tool_agent, "explode please", session_id="boom")
    assert reply.status_code == 200
    assert "exploded: boom" in reply.json()["choices"][0]["message"]["content"]
    assert events(tool_agent, session_id="boom", event_type="error")["total"] == 1
    mock_model.script(tool_block("shout", '{"message": "still here"}'), "ok")
    chat(tool_agent, "shout", session_id="after-boom")
    result = events(tool_agent, session_id="after-boom", event_type="tool_result")["events"][0]["content"]
    assert result["result"] == "STILL HERE"


def test_unknown_tool_and_bad_block_are_reported_to_the_model(tool_agent, mock_model):
    mock_model.script(tool_block("teleport", "{}"))
    reply = chat(tool_agent, "teleport", session_id="unknown")
    assert "unknown tool 'teleport'" in reply.json()["choices"][0]["message"]["content"]
    mock_model.script("```tool_call\nnot json\n```")
    reply = chat(tool_agent, "garbled", session_id="garbled")
    assert reply.status_code == 200 and "not valid JSON" in reply.json()["choices"][0]["message"]["content"]
    assert events(tool_agent, session_id="garbled", event_type="error")["total"] == 1


def test_step_limit_stops_the_loop(start, mock_model, tools_server):
    agent = start("agent", "stubborn", agent_env(
        "stubborn", mock_model, AGENTIC_LOOP_MAX_STEPS=2, MCP_SERVERS="tools",
        MCP_SERVER_TOOLS_URL=tools_server.url + "/mcp",
        DEBUG_MOCK_RESPONSES=[tool_block("shout", '{"message": "a"}')] * 3,
    ))
    reply = chat(agent, "loop forever", session_id="limit")
    content = reply.json()["choices"][0]["message"]["content"]
    assert reply.status_code == 200 and "step limit of 2" in content
    assert events(agent, session_id="limit", event_type="tool_call")["total"] == 2


def test_tools_are_discovered_when_the_server_starts_later(start, mock_model):
    port = free_port()
    agent = start("agent", "early", agent_env(
        "early", mock_model, MCP_SERVERS="late-tools", MCP_SERVER_LATE_TOOLS_URL=f"http://127.0.0.1:{port}/mcp",
    ))
    assert httpx.get(agent.url + "/.well-known/agent").json()["skills"] == []
    mock_model.script(tool_block("shout", '{"message": "x"}'))
    reply = chat(agent, "server is down", session_id="down")
    content = reply.json()["choices"][0]["message"]["content"]
    assert reply.status_code == 200 and "Tool shout failed" in content and "not reachable yet: MCP server late-tools" in content
    assert events(agent, session_id="down", event_type="error")["total"] == 1
    start("mcp", "late-tools", {"MCP_TOOLS_STRING": TOOLS}, port=port)
    skills = wait_until(lambda: httpx.get(agent.url + "/.well-known/agent").json()["skills"], timeout=20,
                        interval=0.2, what="the late server's tools on the agent card")
    assert {skill["name"] for skill in skills} == {"double_root", "shout", "explode"}


def test_mcp_syntax_error_is_a_startup_error_naming_the_line(start):
    server = start("mcp", "broken-tools", {"MCP_TOOLS_STRING": "def fine():\n    return 1\n\ndef broken(:\n"}, ready=False)
    assert wait_for_exit(server) == 2
    assert "syntax error on line 4" in server.log() and "Traceback" not in server.log()


@pytest.mark.parametrize("env, message", [
    ({"DEBUG_MOCK_RESPONSES": "[oops"}, "DEBUG_MOCK_RESPONSES is not valid JSON"),
    ({"AGENTIC_LOOP_MAX_STEPS": "abc"}, "AGENTIC_LOOP_MAX_STEPS must be an integer, got 'abc'"),
])
def test_a_bad_setting_is_a_one_line_startup_error_naming_the_variable(start, env, message):
    agent = start("agent", "bad-settings", {"AGENT_NAME": "bad-settings", **env}, ready=False)
    assert wait_for_exit(agent) == 2
    lines = agent.log().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kaos-runtime agent: configuration error: ") and message in lines[0]


def test_memory_bounds_evict_oldest_first(start):
    agent = start("agent", "forgetful", agent_env(
        "forgetful", MEMORY_MAX_SESSIONS=2, MEMORY_MAX_SESSION_EVENTS=3,
        DEBUG_MOCK_RESPONSES=[f"answer {i}" for i in range(10)],
    ))
    for name in ("one", "two", "three"):
        chat(agent, f"hello {name}", session_id=name)
    assert httpx.get(agent.url + "/memory/sessions").json()["sessions"] == ["two", "three"]
    chat(agent, "again", session_id="three")
    kept = events(agent, session_id="three")
    assert kept["total"] == 3
    assert [e["content"] for e in kept["events"]] == ["answer 2", "again", "answer 3"]


def test_memory_can_be_switched_off(start):
    agent = start("agent", "amnesiac", agent_env("amnesiac", MEMORY_ENABLED="false", DEBUG_MOCK_RESPONSES=["hi"]))
    assert chat(agent, "remember me").json()["choices"][0]["message"]["content"] == "hi"
    assert events(agent) == {"agent": "amnesiac", "events": [], "total": 0}


def test_acompletion_client_and_preload(start, mock_model):
    agent = start("agent", "classic", agent_env("classic", mock_model, MODEL_CLIENT="acompletion", MODEL_PRELOAD="true"))
    assert httpx.get(agent.url + "/ready").json()["model_client_loaded"] is True
    mock_model.script("through litellm.acompletion")
    assert chat(agent, "hi").json()["choices"][0]["message"]["content"] == "through litellm.acompletion"
    assert mock_model.requests()[-1]["model"] == "ollama/smollm2:135m"


def test_tool_server_going_down_and_coming_back(start, mock_model):
    port = free_port()
    server = start("mcp", "flaky-tools", {"MCP_TOOLS_STRING": TOOLS}, port=port)
    agent = start("agent", "patient", agent_env(
        "patient", mock_model, MCP_SERVERS="flaky-tools", MCP_SERVER_FLAKY_TOOLS_URL=f"http://127.0.0.1:{port}/mcp",
    ))
    mock_model.script(tool_block("shout", '{"message": "one"}'), "first done")
    assert chat(agent, "first").json()["choices"][0]["message"]["content"] == "first done"
    server.stop()
    mock_model.script(tool_block("shout", '{"message": "two"}'))
    reply = chat(agent, "second", session_id="while-down")
    assert reply.status_code == 200
    assert "Tool shout failed: MCP server flaky-tools" in reply.json()["choices"][0]["message"]["content"]
    assert events(agent, session_id="while-down", event_type="error")["total"] == 1
    start("mcp", "flaky-tools", {"MCP_TOOLS_STRING": TOOLS}, port=port)
    mock_model.script(tool_block("shout", '{"message": "three"}'), "third done")
    assert chat(agent, "third", session_id="back").json()["choices"][0]["message"]["content"] == "third done"
    assert events(agent, session_id="back", event_type="tool_result")["events"][0]["content"]["result"] == "THREE"
