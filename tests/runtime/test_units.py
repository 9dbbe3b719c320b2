"""Pure parts of the runtime: config, blocks, request validation, memory, tool loading."""

from __future__ import annotations

import pytest

from kaos_runtime.agent_app import agent_card
from kaos_runtime.blocks import BadBlock, Delegation, ToolCall, find_action
from kaos_runtime.chat_request import BadRequest, parse_chat_body, parse_depth
from kaos_runtime.memory import Memory
from kaos_runtime.model import openai_base_url
from kaos_runtime.prompts import system_prompt
from kaos_runtime.python_string_tools import ToolsSourceError, load_tools
from kaos_runtime.settings import (
    AgentSettings,
    ConfigError,
    McpServerSettings,
    MemorySettings,
    ServerSettings,
    env_key,
    peer_base_url,
)


def test_peer_and_mcp_env_names():
    config = AgentSettings.from_env({
        "PEER_AGENTS": "loop-worker-del, other",
        "PEER_AGENT_LOOP_WORKER_DEL_CARD_URL": "http://w:8000/.well-known/agent",
        "PEER_AGENT_OTHER_CARD_URL": "http://o:8000/.well-known/agent.json",
        "MCP_SERVERS": "tools",
        "MCP_SERVER_TOOLS_URL": "http://t:8000/mcp",
    })
    assert [(p.name, p.base_url) for p in config.peers] == [("loop-worker-del", "http://w:8000"), ("other", "http://o:8000")]
    assert config.mcp_servers[0].url == "http://t:8000/mcp"
    assert env_key("a-b.c") == "A_B_C"
    assert peer_base_url("http://x/ns/agent/w/.well-known/agent/") == "http://x/ns/agent/w"


@pytest.mark.parametrize("env, variable", [
    ({"PEER_AGENTS": "w"}, "PEER_AGENT_W_CARD_URL"),
    ({"MCP_SERVERS": "t"}, "MCP_SERVER_T_URL"),
    ({"AGENTIC_LOOP_MAX_STEPS": "many"}, "AGENTIC_LOOP_MAX_STEPS"),
    ({"AGENTIC_LOOP_MAX_STEPS": "0"}, "AGENTIC_LOOP_MAX_STEPS"),
    ({"MEMORY_ENABLED": "maybe"}, "MEMORY_ENABLED"),
    ({"DEBUG_MOCK_RESPONSES": "[not json"}, "DEBUG_MOCK_RESPONSES"),
    ({"DEBUG_MOCK_RESPONSES": '{"a": 1}'}, "DEBUG_MOCK_RESPONSES"),
    ({"MAX_REQUEST_BODY_BYTES": "-1"}, "MAX_REQUEST_BODY_BYTES"),
    ({"MODEL_CLIENT": "other"}, "MODEL_CLIENT"),
])
def test_config_errors_name_the_variable(env, variable):
    with pytest.raises(ConfigError, match=variable):
        AgentSettings.from_env(env)


def test_errors_are_one_line_naming_each_variable():
    with pytest.raises(ConfigError) as caught:
        AgentSettings.from_env({"AGENTIC_LOOP_MAX_STEPS": "abc", "MODEL_TIMEOUT_SECONDS": "-1"})
    message = str(caught.value)
    assert "\n" not in message
    assert "AGENTIC_LOOP_MAX_STEPS must be an integer, got 'abc'" in message and "MODEL_TIMEOUT_SECONDS" in message


def test_blank_variables_are_unset_and_values_trimmed():
    config = AgentSettings.from_env({"AGENT_NAME": "  ", "AGENTIC_LOOP_MAX_STEPS": " 3 ", "MEMORY_ENABLED": " FALSE ",
                                     "MODEL_CLIENT": " Acompletion ", "DEBUG_MOCK_RESPONSES": " ", "MODEL_NAME": " m "})
    assert (config.name, config.max_steps, config.memory.enabled, config.model_client, config.mock_responses,
            config.model_name) == ("agent", 3, False, "acompletion", None, "m")


def test_model_api_key_falls_back_to_openai_api_key():
    def key(env: dict) -> str:
        return AgentSettings.from_env(env).api_key.get_secret_value()

    assert key({}) == "sk-kaos-no-key"
    assert key({"OPENAI_API_KEY": "o", "MODEL_API_KEY": ""}) == "o"
    assert key({"MODEL_API_KEY": "m", "OPENAI_API_KEY": "o"}) == "m"
    assert "secret-key" not in repr(AgentSettings.from_env({"MODEL_API_KEY": "secret-key"}))


def test_server_and_mcp_server_settings():
    assert ServerSettings.from_env({}) == ServerSettings(host="0.0.0.0", port=8000, log_level="INFO")
    assert ServerSettings.from_env({"LOG_LEVEL": "debug"}).log_level == "DEBUG"
    assert ServerSettings.from_env({"AGENT_LOG_LEVEL": "loud", "LOG_LEVEL": "debug"}).log_level == "INFO"
    for port, problem in (("http", "must be an integer"), ("0", "must be at least 1"), ("70000", "must be at most 65535")):
        with pytest.raises(ConfigError, match=f"PORT {problem}"):
            ServerSettings.from_env({"PORT": port})
    assert McpServerSettings.from_env({"MCP_PATH": " "}) == McpServerSettings(
        tools_source="", server_name="kaos-python-string", path="/mcp")


def test_settings_built_directly_read_no_environment(monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_SESSIONS", "7")
    assert MemorySettings().max_sessions == 1000
    assert AgentSettings().memory.max_sessions == 1000
    assert AgentSettings.from_env().memory.max_sessions == 7


def test_defaults():
    config = AgentSettings.from_env({})
    assert (config.max_steps, config.memory, config.mock_responses) == (5, MemorySettings(), None)
    assert openai_base_url("http://m:8000/") == "http://m:8000/v1"
    assert openai_base_url("http://m:8000/v1") == "http://m:8000/v1"


def test_find_action():
    assert find_action("plain answer") is None
    assert find_action('x\n```tool_call\n{"tool": "echo", "arguments": {"m": "hi\\nthere"}}\n```') == \
        ToolCall("echo", {"m": "hi\nthere"})
    assert find_action('```delegate\n{"agent": "w", "task": "Process task 42"}\n```') == \
        Delegation("w", "Process task 42")
    assert isinstance(find_action("```delegate\n{nope}\n```"), BadBlock)
    assert isinstance(find_action('```delegate\n{"agent": "w"}\n```'), BadBlock)
    assert isinstance(find_action('```tool_call\n{"tool": "t", "arguments": []}\n```'), BadBlock)
    assert find_action("```python\nprint(1)\n```") is None


@pytest.mark.parametrize("raw, detail", [
    (b"{", "malformed JSON"),
    (b"[]", "JSON object"),
    (b"{}", "messages is required"),
    (b'{"messages": []}', "must not be empty"),
    (b'{"messages": "hi"}', "must be a list"),
    (b'{"messages": [1]}', "must be an object"),
    (b'{"messages": [{"role": "wizard", "content": "x"}]}', "role"),
    (b'{"messages": [{"role": "user", "content": 5}]}', "content"),
    (b'{"messages": [{"role": "system", "content": "x"}]}', "user message"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "stream"),
    (b'{"messages": [{"role": "user", "content": "x"}], "session_id": 3}', "session_id"),
])
def test_bad_chat_bodies(raw, detail):
    with pytest.raises(BadRequest, match=detail) as caught:
        parse_chat_body(raw)
    assert caught.value.status == 400


def test_chat_body_accepts_content_parts_and_delegations():
    body = parse_chat_body(b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, '
                           b'{"type": "text", "text": "b"}]}, {"role": "task-delegation", "content": "t"}]}')
    assert body.messages == [{"role": "user", "content": "ab"}, {"role": "task-delegation", "content": "t"}]
    assert parse_depth(None) == 0 and parse_depth("2") == 2
    with pytest.raises(BadRequest):
        parse_depth("-1")


def test_memory_bounds_filters_and_total():
    memory = Memory(MemorySettings(max_sessions=2, max_session_events=3))
    for index in range(5):
        memory.record("s1", "user_message", f"m{index}")
    memory.record("s2", "agent_response", "a")
    events, total = memory.events(session_id="s1")
    assert [e["content"] for e in events] == ["m2", "m3", "m4"] and total == 3
    memory.record("s3", "user_message", "x")
    assert memory.sessions() == ["s2", "s3"]
    events, total = memory.events(limit=1)
    assert total == 2 and events[0]["content"] == "x"
    assert memory.events(event_type="agent_response")[1] == 1
    assert memory.events(limit=0) == ([], 2)


def test_memory_disabled_records_nothing():
    memory = Memory(MemorySettings(enabled=False))
    memory.record("s", "user_message", "x")
    assert memory.events() == ([], 0) and memory.sessions() == []


def test_load_tools_keeps_helpers_and_imports_visible():
    tools = load_tools("import math\nfrom os.path import join\n"
                       "def _twice(x):\n    return 2 * x\n"
                       "def root(value: float) -> float:\n    \"\"\"Twice the root.\"\"\"\n    return _twice(math.sqrt(value))\n")
    assert [tool.__name__ for tool in tools] == ["root"]
    assert tools[0](16) == 8


@pytest.mark.parametrize("source, message", [
    ("def ok():\n    return 1\ndef broken(:\n    pass\n", "line 3"),
    ("x = 1\nraise RuntimeError('nope')\n", "line 2"),
])
def test_load_tools_errors_name_the_line(source, message):
    with pytest.raises(ToolsSourceError, match=message):
        load_tools(source)


def test_card_capabilities_and_prompt():
    config = AgentSettings.from_env({"AGENT_NAME": "c", "PEER_AGENTS": "w", "PEER_AGENT_W_CARD_URL": "http://w/.well-known/agent"})
    card = agent_card(config, "http://c", [])
    assert card["capabilities"] == ["message_processing", "task_execution", "task_delegation"]
    prompt = system_prompt("Be brief.", [{"name": "echo", "description": "Echo", "inputSchema": {}}],
                           [{"name": "w", "description": "Worker"}])
    assert "Be brief." in prompt and "```tool_call" in prompt and "- w: Worker" in prompt


async def test_refresher_is_single_flight_bounded_and_rate_limited():
    import asyncio

    from kaos_runtime.refresh import Refresher

    calls = []
    release = asyncio.Event()

    async def slow_discovery():
        calls.append(1)
        await release.wait()

    refresher = Refresher(slow_discovery, interval=60)
    await asyncio.gather(refresher.run_if_due(wait=0.05), refresher.run_if_due(wait=0.05))
    assert len(calls) == 1  # one discovery in flight, callers waited a bounded time
    release.set()
    await refresher.run_if_due(wait=1)
    await refresher.run_if_due(wait=1)
    assert len(calls) == 1  # not due again before the interval
    await refresher.run(wait=1)
    assert len(calls) == 2  # an explicit run does not wait for the interval
