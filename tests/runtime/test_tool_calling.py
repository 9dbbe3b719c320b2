"""kaos_runtime.loop.tool_calling and clients.tool_calls: native tools offered, native calls understood (pure parts)."""

from __future__ import annotations

import json

import pytest

from kaos_runtime.clients.tool_calls import CallAssembler, NativeCall, calls_of, scripted_reply
from kaos_runtime.core.settings import AgentSettings, ConfigError
from kaos_runtime.loop.blocks import BadBlock, Delegation, ToolCall
from kaos_runtime.loop.tool_calling import action_of, assistant_message, openai_tools, tool_message

SKILLS = [{"name": "echo", "description": "Echo it", "inputSchema": {"type": "object", "properties": {
    "message": {"type": "string"}}, "required": ["message"]}}]
PEERS = [{"name": "worker", "description": "Does work"}, {"name": "helper", "description": ""}]


def test_mcp_tools_and_peers_become_openai_tools():
    tools = openai_tools(SKILLS, PEERS)
    assert [tool["function"]["name"] for tool in tools] == ["echo", "delegate"]
    assert tools[0] == {"type": "function", "function": {"name": "echo", "description": "Echo it",
                                                         "parameters": SKILLS[0]["inputSchema"]}}
    delegate = tools[1]["function"]
    assert delegate["parameters"]["properties"]["agent"]["enum"] == ["worker", "helper"]
    assert delegate["parameters"]["required"] == ["agent", "task"]
    assert "- worker: Does work" in delegate["description"]
    assert openai_tools(SKILLS, []) == tools[:1]
    assert openai_tools([], []) == []
    # a schema that is not an object schema is replaced; an MCP tool named delegate yields to the peers' function
    odd = openai_tools([{"name": "x", "inputSchema": {}}, {"name": "delegate", "inputSchema": {}}], PEERS)
    assert odd[0]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert [tool["function"]["name"] for tool in odd] == ["x", "delegate"]


def test_native_calls_become_the_actions_of_fenced_blocks():
    assert action_of(NativeCall("1", "echo", '{"message": "hi"}'), delegation=True) == ToolCall("echo", {"message": "hi"})
    assert action_of(NativeCall("1", "echo", ""), delegation=False) == ToolCall("echo", {})
    assert action_of(NativeCall("1", "delegate", '{"agent": "worker", "task": "t"}'), delegation=True) == \
        Delegation("worker", "t")
    # without peers, "delegate" is just a tool name (the catalog reports it unknown)
    assert action_of(NativeCall("1", "delegate", "{}"), delegation=False) == ToolCall("delegate", {})
    bad_json = action_of(NativeCall("1", "echo", "{nope"), delegation=False)
    assert isinstance(bad_json, BadBlock) and "not valid JSON" in bad_json.problem
    assert isinstance(action_of(NativeCall("1", "echo", "[1]"), delegation=False), BadBlock)
    missing = action_of(NativeCall("1", "delegate", '{"agent": "worker"}'), delegation=True)
    assert missing == BadBlock("delegate", 'a delegate call needs "agent" and "task" (strings)')


def test_messages_of_a_native_step():
    calls = (NativeCall("c1", "echo", '{"message": "hi"}'), NativeCall("c2", "add", '{"a": 1}'))
    assert assistant_message("", calls) == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": '{"message": "hi"}'}},
        {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
    ]}
    assert tool_message(calls[1], "2") == {"role": "tool", "tool_call_id": "c2", "content": "2"}


def test_calls_of_whole_messages_and_streamed_fragments():
    openai_form = [{"id": "x", "type": "function", "function": {"name": "echo", "arguments": '{"m": 1}'}}]
    assert calls_of(openai_form) == (NativeCall("x", "echo", '{"m": 1}'),)
    assert calls_of([{"name": "echo", "arguments": {"m": 1}}], prefix="mock") == (NativeCall("mock_0", "echo", '{"m": 1}'),)
    assert calls_of(None) == ()
    joined = CallAssembler()
    joined.add([{"index": 0, "id": "a", "function": {"name": "ec", "arguments": ""}}])
    joined.add([{"index": 0, "function": {"name": "ho", "arguments": '{"m"'}},
                {"index": 1, "id": "b", "function": {"name": "add", "arguments": "{}"}}])
    joined.add([{"index": 0, "function": {"arguments": ": 1}"}}])
    assert joined.calls() == (NativeCall("a", "echo", '{"m": 1}'), NativeCall("b", "add", "{}"))


def test_debug_mock_responses_may_script_native_calls():
    entries = ["plain", {"content": "thinking", "tool_calls": [{"name": "echo", "arguments": {"message": "hi"}}]},
               {"tool_calls": [{"id": "k", "type": "function", "function": {"name": "add", "arguments": "{}"}}]}]
    config = AgentSettings.from_env({"DEBUG_MOCK_RESPONSES": json.dumps(entries)})
    assert scripted_reply(config.mock_responses[0]) == ("plain", ())
    assert scripted_reply(config.mock_responses[1]) == ("thinking", (NativeCall("mock_call_0", "echo", '{"message": "hi"}'),))
    assert scripted_reply(config.mock_responses[2]) == ("", (NativeCall("k", "add", "{}"),))


@pytest.mark.parametrize("entries, problem", [
    ([1], r"DEBUG_MOCK_RESPONSES\[0\] must be a string or an object"),
    (["ok", {"text": "x"}], r"DEBUG_MOCK_RESPONSES\[1\] has unknown keys \['text'\]"),
    ([{"tool_calls": [{"arguments": {}}]}], r"DEBUG_MOCK_RESPONSES\[0\]\.tool_calls\[0\] needs a name"),
    ([{"tool_calls": {"name": "x"}}], r"tool_calls must be a list"),
    ([{"tool_calls": [{"name": "x", "arguments": 3}]}], r"arguments must be an object"),
    ([{"content": 5}], r"content must be a string"),
])
def test_bad_scripted_entries_are_startup_errors_naming_the_entry(entries, problem):
    with pytest.raises(ConfigError, match=problem):
        AgentSettings.from_env({"DEBUG_MOCK_RESPONSES": json.dumps(entries)})


@pytest.mark.parametrize("value, mode", [("", "auto"), (" Native ", "native"), ("fenced", "fenced")])
def test_model_tool_calling_setting(value, mode):
    assert AgentSettings.from_env({"MODEL_TOOL_CALLING": value}).tool_calling == mode


def test_model_tool_calling_must_be_a_known_mode():
    with pytest.raises(ConfigError, match="MODEL_TOOL_CALLING must be 'auto', 'native' or 'fenced', got 'always'"):
        AgentSettings.from_env({"MODEL_TOOL_CALLING": "always"})
