"""Context within the model's window, and compaction, on a running agent (docs/memory.md).

A 200-turn conversation in one session, each turn calling a tool whose result is far larger than
the model's window: the mock model counts every request it receives with tiktoken and refuses
one over the window (as OpenAI does), and the agent still answers from the start of the
conversation, which only a compaction's summary still holds."""

from __future__ import annotations

import httpx
import pytest

from e2e.conftest import (
    chat,
    create_agent_resource,
    create_mcpserver_resource,
    deploy_and_wait,
    memory_events,
    wait_for_status,
)

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

WINDOW = 4096
TURNS = 200
BIG_TOOLS = '''
def big(lines: int) -> str:
    """A long report."""
    return "\\n".join(f"report line {number}: value {number * 7}" for number in range(lines))
'''
FILLER = " ".join(f"detail{number}" for number in range(40))


async def test_a_long_conversation_with_large_tool_results_fits_the_window_and_keeps_its_start(
        test_namespace, shared_modelapi, mock_model_server):
    deploy_and_wait(create_mcpserver_resource(test_namespace, "big-tools", BIG_TOOLS), test_namespace)
    wait_for_status("MCPServer", "big-tools", test_namespace, "Ready", timeout=120)
    agent = create_agent_resource(test_namespace, "long-talk", shared_modelapi, model="gpt-4o-mini",
                                  mcp_servers=["big-tools"], max_steps=3)
    agent["spec"]["config"]["contextWindow"] = WINDOW
    agent["spec"]["config"]["memory"] = {"maxSessionEvents": 2000}
    agent["spec"]["memory"] = {"compaction": {"thresholdPercent": 50, "model": "e2e-summarizer"}}
    url = deploy_and_wait(agent, test_namespace)

    mock_model_server.reset()
    async with httpx.AsyncClient(timeout=30) as client:
        base = mock_model_server.url
        (await client.post(f"{base}/_mock/limit", json={"max_prompt_tokens": WINDOW})).raise_for_status()
        (await client.post(f"{base}/_mock/echo_for", json={"system_contains": "You condense a conversation"})
         ).raise_for_status()
    script = []
    for turn in range(TURNS):
        script += [{"tool_calls": [{"name": "big", "arguments": {"lines": 2000}}]}, f"noted turn {turn}"]
    mock_model_server.script(script)

    session = "long-session"
    for turn in range(TURNS):
        text = "My secret code is 4711. " if turn == 0 else ""
        response = await chat(url, f"{text}Turn {turn}: please run the report. {FILLER}", session_id=session)
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == f"noted turn {turn}", f"turn {turn}"

    async with httpx.AsyncClient(timeout=30) as client:
        sizes = (await client.get(f"{mock_model_server.url}/_mock/limit")).json()
    assert sizes["over"] == 0 and 0 < sizes["largest"] <= WINDOW, sizes
    assert sizes["largest"] > WINDOW // 2, sizes  # history did fill the budget
    assert sizes["counted"] >= 2 * TURNS

    # the start is no longer sent as such, but its summary is, and the model answers from it
    mock_model_server.script(["the code is 4711"])
    response = await chat(url, "What is my secret code?", session_id=session)
    assert response.json()["choices"][0]["message"]["content"] == "the code is 4711"
    last = mock_model_server.requests()[-1]["messages"]
    assert "My secret code is 4711" in last[0]["content"]  # the summary, in the system prompt
    assert not any("Turn 0:" in str(message.get("content")) for message in last[1:])

    # the summaries point to the events they replace, which stay in memory
    compactions = (await memory_events(url, session_id=session, event_type="context_compacted"))["events"]
    assert compactions, "the session was compacted"
    first = (await memory_events(url, session_id=session, event_type="user_message", limit=1000))["events"][0]
    assert first["content"].startswith("My secret code is 4711")
    assert first["event_id"] in compactions[0]["metadata"]["replaces"]
    assert compactions[-1]["metadata"]["replaces"][-1] == compactions[-2]["event_id"]
    results = (await memory_events(url, session_id=session, event_type="tool_result", limit=1))["events"]
    assert results[0]["content"]["result"].count("report line") == 2000  # the full result is kept
