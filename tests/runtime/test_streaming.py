"""True streaming over real processes: the answer's pieces reach the client as the model
produces them; steps that ask for tools or delegations never do; usage comes last when asked
for; a client that goes away stops the work it started."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from openai import OpenAI

from tests.support.polling import wait_until

from .conftest import agent_env, events

TOOLS = '''
def echo(message: str) -> str:
    """Return the message."""
    return message
'''


def body(text: str, **extra) -> dict:
    return {"model": "x", "messages": [{"role": "user", "content": text}], "stream": True, **extra}


def parse(line: str) -> dict | str:
    data = line.removeprefix("data: ")
    return data if data == "[DONE]" else json.loads(data)


def content_of(chunk) -> str:
    return (chunk["choices"][0]["delta"].get("content") or "") if isinstance(chunk, dict) and chunk["choices"] else ""


def stream_all(agent, text: str, **extra) -> list[tuple[float, dict | str]]:
    """Every SSE event of a streamed request, with the time it arrived."""
    arrived = []
    with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body(text, **extra), timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line:
                arrived.append((time.monotonic(), parse(line)))
    return arrived


def text_of(arrived) -> str:
    return "".join(content_of(chunk) for _, chunk in arrived)


def native(*calls: dict) -> dict:
    return {"tool_calls": list(calls)}


@pytest.fixture(scope="module")
def tools_server(start):
    return start("mcp", "stream-tools", {"MCP_TOOLS_STRING": TOOLS})


@pytest.fixture(scope="module")
def worker(start, mock_model):
    return start("agent", "sworker", agent_env("sworker", mock_model))


def streaming_agent(start, mock_model, tools_server, worker, name: str, mode: str):
    return start("agent", name, agent_env(
        name, mock_model, MODEL_TOOL_CALLING=mode, MCP_SERVERS="tools",
        MCP_SERVER_TOOLS_URL=tools_server.url + "/mcp", PEER_AGENTS="sworker",
        PEER_AGENT_SWORKER_CARD_URL=worker.url + "/.well-known/agent"))


@pytest.fixture(scope="module")
def native_streamer(start, mock_model, tools_server, worker):
    return streaming_agent(start, mock_model, tools_server, worker, "nstreamer", "native")


@pytest.fixture(scope="module")
def fenced_streamer(start, mock_model, tools_server, worker):
    return streaming_agent(start, mock_model, tools_server, worker, "fstreamer", "fenced")


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


@pytest.mark.parametrize("which", ["native_streamer", "fenced_streamer"])
def test_the_first_piece_arrives_before_the_model_has_finished(which, request, mock_model):
    agent = request.getfixturevalue(which)
    # The model sends "Hello", then waits for the test to release it: the client must see
    # "Hello" while the model is still generating. No timing is involved.
    mock_model.script({"parts": ["Hello", " world", "!"], "gate": which})
    with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body("hi"), timeout=60) as response:
        lines = (line for line in response.iter_lines() if line)
        chunks = []
        for line in lines:
            chunks.append(parse(line))
            if content_of(chunks[-1]):
                break
        assert content_of(chunks[-1]) == "Hello"
        assert mock_model.streams()[0]["completed"] is False  # the model is still at it
        mock_model.release(which)
        chunks += [parse(line) for line in lines]
    assert "".join(content_of(c) for c in chunks) == "Hello world!"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and chunks[-1] == "[DONE]"
    assert mock_model.requests()[0]["stream"] is True


def test_pieces_arrive_spread_over_time_not_in_one_burst(native_streamer, mock_model):
    parts = ["one ", "two ", "three ", "four ", "five"]
    mock_model.script({"parts": parts, "interval": 0.2})
    arrived = [(at, chunk) for at, chunk in stream_all(native_streamer, "count") if content_of(chunk)]
    assert [content_of(chunk) for _, chunk in arrived] == parts  # one chunk per piece the model produced
    gaps = [later - earlier for (earlier, _), (later, _) in zip(arrived, arrived[1:])]
    # The model waits 0.2 s before each piece after the first: relayed as produced, the pieces
    # arrive about that far apart; buffered, they would arrive together.
    assert sum(gaps) >= 0.4 and sum(gap >= 0.1 for gap in gaps) >= 2, gaps


def test_a_native_tool_step_is_not_streamed(native_streamer, mock_model):
    mock_model.script({"content": "", "tool_calls": [{"name": "echo", "arguments": {"message": "quiet"}}]},
                      {"parts": ["The tool ", "said quiet."]})
    arrived = stream_all(native_streamer, "use the tool", session_id="nstream-tool")
    assert text_of(arrived) == "The tool said quiet."
    kinds = [e["event_type"] for e in events(native_streamer, session_id="nstream-tool")["events"]]
    assert kinds == ["user_message", "tool_call", "tool_result", "agent_response"]
    assert all(r["stream"] for r in mock_model.requests())


def test_a_fenced_tool_step_and_delegation_are_not_streamed(fenced_streamer, mock_model):
    mock_model.script({"parts": ["```tool", "_call\n", '{"tool": "echo", "arguments": {"message": "x"}}', "\n```"]},
                      {"parts": ["```delegate\n", '{"agent": "sworker", "task": "help"}\n```']},
                      "echo from the worker's model",
                      {"parts": ["All ", "done."]})
    arrived = stream_all(fenced_streamer, "work", session_id="fstream")
    assert text_of(arrived) == "All done."
    kinds = [e["event_type"] for e in events(fenced_streamer, session_id="fstream")["events"]]
    assert kinds == ["user_message", "tool_call", "tool_result", "delegation_request", "delegation_response",
                     "agent_response"]


def test_usage_comes_in_the_last_chunk_when_asked_for(native_streamer, mock_model):
    mock_model.script(native({"name": "echo", "arguments": {"message": "u"}}), {"parts": ["a", "b", "c"]})
    client = OpenAI(base_url=native_streamer.url + "/v1", api_key="none")
    chunks = list(client.chat.completions.create(model="x", messages=[{"role": "user", "content": "usage"}],
                                                 stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "abc"
    last = chunks[-1]
    assert last.choices == []
    # the tool step (1 + 1 tokens) and the answer step (1 prompt token, one per piece)
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (2, 4, 6)
    assert all(c.usage is None for c in chunks[:-1])
    mock_model.script("no usage asked")
    plain = stream_all(native_streamer, "no usage")
    assert all("usage" not in chunk for _, chunk in plain if isinstance(chunk, dict))


def test_a_scripted_answer_streams_whole(start, mock_model):
    agent = start("agent", "scripted-streamer", agent_env("scripted-streamer", mock_model,
                                                          DEBUG_MOCK_RESPONSES=["Line one.\nLine two."]))
    assert text_of(stream_all(agent, "script")) == "Line one.\nLine two."
    assert mock_model.requests() == []


def test_a_client_that_disconnects_stops_the_model_stream(native_streamer, mock_model):
    mock_model.script({"parts": ["Start", " and never finish"], "gate": "never"})
    with httpx.stream("POST", native_streamer.url + "/v1/chat/completions", json=body("go", session_id="gone"),
                      timeout=60) as response:
        for line in response.iter_lines():
            if line and content_of(parse(line)):
                break
    # The connection is closed; the agent drops its own connection to the model in turn.
    wait_until(lambda: mock_model.streams()[0]["disconnected"], timeout=15, what="the model stream dropped")
    assert mock_model.streams()[0]["completed"] is False
    wait_until(lambda: events(native_streamer, session_id="gone", event_type="error")["total"] == 1, timeout=15,
               what="the cancellation recorded")
    [cancelled] = events(native_streamer, session_id="gone", event_type="error")["events"]
    assert cancelled["metadata"]["cancelled"] is True
    assert events(native_streamer, session_id="gone", event_type="agent_response")["total"] == 0
    assert len(mock_model.requests()) == 1


def test_a_disconnect_during_a_delegation_stops_the_peer_too(fenced_streamer, worker, mock_model):
    # coordinator (streaming) -> worker (a plain request) -> the worker's model, which holds its answer
    mock_model.script('```delegate\n{"agent": "sworker", "task": "slow"}\n```', {"content": "late", "gate": "held"})
    with httpx.stream("POST", fenced_streamer.url + "/v1/chat/completions", json=body("slow", session_id="chain"),
                      timeout=60) as response:
        lines = response.iter_lines()
        next(line for line in lines if line)  # the role chunk: the request is running
        wait_until(lambda: len(mock_model.streams()) == 1, timeout=15, what="the worker waiting on its model")
    wait_until(lambda: mock_model.streams()[0]["disconnected"], timeout=15, what="the worker's model call dropped")
    assert events(worker, event_type="error")["events"][-1]["metadata"].get("cancelled") is True
    assert events(fenced_streamer, session_id="chain", event_type="error")["events"][0]["metadata"]["cancelled"]
