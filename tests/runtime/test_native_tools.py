"""Native tool calling over real processes: tools and peers offered as OpenAI ``tools``, the
model's ``tool_calls`` run concurrently, results sent back as ``tool`` messages; memory
events, the step and depth limits, access rules and errors as in the fenced protocol."""

from __future__ import annotations

import json

import httpx
import pytest

from .conftest import agent_env, chat, events

TOOLS = '''
import asyncio

_met = asyncio.Event()

def echo(message: str) -> str:
    """Return the message."""
    return message

def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError("exploded: " + reason)

async def meet_first() -> str:
    """Waits (at most 20 s) until meet_second has been called."""
    try:
        await asyncio.wait_for(_met.wait(), 20)
        return "met"
    except asyncio.TimeoutError:
        return "alone"

async def meet_second() -> str:
    """Lets meet_first go on."""
    _met.set()
    return "arrived"
'''


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def native(*calls: dict, content: str = "") -> dict:
    """A scripted model reply asking for native tool calls."""
    return {"content": content, "tool_calls": list(calls)}


def block(kind: str, payload: dict) -> str:
    return f"```{kind}\n{json.dumps(payload)}\n```"


def kinds(agent, session: str) -> list[str]:
    return [event["event_type"] for event in events(agent, session_id=session, limit=100)["events"]]


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


@pytest.fixture(scope="module")
def tools_server(start):
    return start("mcp", "native-tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.fixture(scope="module")
def worker(start, mock_model):
    return start("agent", "nworker", agent_env("nworker", mock_model, AGENT_DESCRIPTION="Does the work",
                                               DEBUG_MOCK_RESPONSES=[f"worker answer {n}" for n in range(20)]))


def agent_with(start, mock_model, tools_server, worker, name: str, mode: str, **extra):
    return start("agent", name, agent_env(
        name, mock_model, MODEL_TOOL_CALLING=mode, MCP_SERVERS="tools",
        MCP_SERVER_TOOLS_URL=tools_server.url + "/mcp", PEER_AGENTS="nworker",
        PEER_AGENT_NWORKER_CARD_URL=worker.url + "/.well-known/agent", **extra))


@pytest.fixture(scope="module")
def native_agent(start, mock_model, tools_server, worker):
    return agent_with(start, mock_model, tools_server, worker, "natively", "native", AGENTIC_LOOP_MAX_STEPS=3)


@pytest.fixture(scope="module")
def fenced_agent(start, mock_model, tools_server, worker):
    return agent_with(start, mock_model, tools_server, worker, "fencedly", "fenced", AGENTIC_LOOP_MAX_STEPS=3)


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def test_tools_and_peers_are_offered_natively(native_agent, mock_model):
    mock_model.script("Nothing to do.")
    assert chat(native_agent, "hi").json()["choices"][0]["message"]["content"] == "Nothing to do."
    [request] = mock_model.requests()
    assert tool_names(request) == ["echo", "add", "explode", "meet_first", "meet_second", "delegate"]
    delegate = request["tools"][-1]["function"]
    assert delegate["parameters"]["properties"]["agent"]["enum"] == ["nworker"]
    assert "nworker: Does the work" in delegate["description"]
    system = request["messages"][0]["content"]
    assert "```tool_call" not in system and "delegate function" in system


def test_several_calls_in_one_step_run_concurrently_and_come_back_as_tool_messages(native_agent, mock_model):
    # meet_first only returns "met" if meet_second runs while it waits: run one after the
    # other, the first call would wait out its 20 s and answer "alone".
    mock_model.script(native(call("meet_first"), call("meet_second"), call("add", a=2, b=3)), "All three done.")
    reply = chat(native_agent, "meet", session_id="meet")
    assert reply.json()["choices"][0]["message"]["content"] == "All three done."
    assert reply.json()["usage"]["total_tokens"] == 4  # two model calls of 2 tokens each
    first, second = mock_model.requests()
    assistant = second["messages"][-4]
    assert assistant["role"] == "assistant" and [c["function"]["name"] for c in assistant["tool_calls"]] == \
        ["meet_first", "meet_second", "add"]
    results = second["messages"][-3:]
    assert [m["role"] for m in results] == ["tool"] * 3
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in assistant["tool_calls"]]
    assert [m["content"] for m in results] == ["met", "arrived", "5"]
    assert kinds(native_agent, "meet").count("tool_call") == 3
    assert kinds(native_agent, "meet").count("tool_result") == 3


def test_native_delegation_and_access_rules(native_agent, mock_model, worker):
    mock_model.script(native(call("delegate", agent="nworker", task="native task 1"),
                             call("delegate", agent="stranger", task="not yours")), "Delegated.")
    assert chat(native_agent, "delegate", session_id="ndel").status_code == 200
    mine = events(native_agent, session_id="ndel")["events"]
    request = next(e for e in mine if e["event_type"] == "delegation_request")
    assert request["content"] == {"agent": "nworker", "task": "native task 1"}
    response = next(e for e in mine if e["event_type"] == "delegation_response")
    assert response["content"]["response"].startswith("worker answer")
    refused = next(e for e in mine if e["event_type"] == "delegation_error")
    assert refused["content"]["agent"] == "stranger" and "not an agent this agent may delegate to" in refused["content"]["error"]
    received = events(worker, event_type="task_delegation_received")["events"]
    assert any(e["content"] == "native task 1" for e in received)
    tool_results = [m for m in mock_model.requests()[1]["messages"] if m["role"] == "tool"]
    assert tool_results[0]["content"].startswith("worker answer")
    assert tool_results[1]["content"].startswith("Delegation to stranger refused")


def test_native_depth_limit(native_agent, mock_model):
    mock_model.script(native(call("delegate", agent="nworker", task="too deep")), "Answered myself.")
    reply = chat(native_agent, "deep", session_id="ndeep", headers={"X-KAOS-Delegation-Depth": "3"})
    assert reply.status_code == 200
    [refused] = events(native_agent, session_id="ndeep", event_type="delegation_error")["events"]
    assert "depth limit" in refused["content"]["error"]


def test_native_errors_go_back_to_the_model(native_agent, mock_model):
    mock_model.script(native(call("missing"), call("explode", reason="boom"),
                             {"name": "echo", "arguments": "{not json"}), "Recovered.")
    reply = chat(native_agent, "errors", session_id="nerr")
    assert reply.json()["choices"][0]["message"]["content"] == "Recovered."
    errors = events(native_agent, session_id="nerr", event_type="error")["events"]
    assert len(errors) == 3
    texts = [m["content"] for m in mock_model.requests()[1]["messages"] if m["role"] == "tool"]
    assert "unknown tool 'missing'" in texts[0] and "exploded: boom" in texts[1] and "not valid JSON" in texts[2]


def test_native_step_limit(native_agent, mock_model):
    mock_model.script(*[native(call("echo", message="again"))] * 3)
    reply = chat(native_agent, "loop", session_id="nlimit")
    assert reply.json()["choices"][0]["message"]["content"].startswith("Stopped: reached the step limit of 3")
    assert len(mock_model.requests()) == 3


def test_the_same_work_records_the_same_events_in_both_protocols(native_agent, fenced_agent, mock_model):
    mock_model.script(native(call("echo", message="same")), native(call("delegate", agent="nworker", task="same task")),
                      native(call("nothing")), "Same answer.")
    chat(native_agent, "compare", session_id="same-native")
    assert tool_names(mock_model.requests()[0])
    mock_model.reset()
    mock_model.script(block("tool_call", {"tool": "echo", "arguments": {"message": "same"}}),
                      block("delegate", {"agent": "nworker", "task": "same task"}),
                      block("tool_call", {"tool": "nothing", "arguments": {}}), "Same answer.")
    chat(fenced_agent, "compare", session_id="same-fenced")
    assert not tool_names(mock_model.requests()[0])
    assert "```tool_call" in mock_model.requests()[0]["messages"][0]["content"]

    def recorded(agent, session):
        found = events(agent, session_id=session, limit=100)["events"]
        return [(e["event_type"], e["content"] if e["event_type"] != "delegation_response" else e["content"]["agent"])
                for e in found]

    assert recorded(native_agent, "same-native") == recorded(fenced_agent, "same-fenced")
    assert [kind for kind, _ in recorded(native_agent, "same-native")] == [
        "user_message", "tool_call", "tool_result", "delegation_request", "delegation_response", "tool_call",
        "error", "agent_response"]


def test_a_fenced_block_still_works_for_a_native_agent(native_agent, mock_model):
    mock_model.script(block("tool_call", {"tool": "echo", "arguments": {"message": "fenced"}}), "ok")
    chat(native_agent, "fenced reply", session_id="nfenced")
    assert kinds(native_agent, "nfenced") == ["user_message", "tool_call", "tool_result", "agent_response"]
    followup = mock_model.requests()[1]["messages"]
    assert followup[-1] == {"role": "user", "content": "Result of tool echo:\nfenced"}


def test_scripted_native_calls_work_in_either_mode(start, mock_model, tools_server, worker):
    script = [native(call("echo", message="scripted"), content="Calling echo."), "Scripted answer."]
    agent = agent_with(start, mock_model, tools_server, worker, "scripted-native", "fenced", DEBUG_MOCK_RESPONSES=script)
    reply = chat(agent, "go", session_id="scripted")
    assert reply.json()["choices"][0]["message"]["content"] == "Scripted answer."
    results = events(agent, session_id="scripted", event_type="tool_result")["events"]
    assert results[0]["content"] == {"tool": "echo", "result": "scripted"}
    assert mock_model.requests() == []


def test_auto_asks_litellm_whether_the_model_calls_functions(start, mock_model, tools_server, worker):
    knows = agent_with(start, mock_model, tools_server, worker, "auto-gpt", "auto", MODEL_NAME="gpt-4o-mini")
    unknown = agent_with(start, mock_model, tools_server, worker, "auto-small", "auto")  # ollama/smollm2:135m
    mock_model.script("a", "b")
    chat(knows, "x")
    chat(unknown, "y")
    gpt, small = mock_model.requests()
    assert "delegate" in tool_names(gpt) and "tools" not in small
    assert "```delegate" in small["messages"][0]["content"]
    assert httpx.get(knows.url + "/ready").json()["model_client_loaded"] is True
