"""A model that produces nothing (no text, no tool call) never makes a silent empty answer: the
agent says so in its answer and records an ``error`` event, plain and streamed, scripted or
from the model server."""

from __future__ import annotations

import pytest

from .conftest import agent_env, chat, events
from .test_streaming import stream_all, text_of

NO_ANSWER = "The model returned an empty answer (no text and no tool call)."


def kinds_and_contents(agent, session: str) -> list[tuple[str, object]]:
    return [(event["event_type"], event["content"]) for event in events(agent, session_id=session)["events"]]


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "empty", agent_env("empty", mock_model))


@pytest.mark.parametrize("nothing", ["", " \n\t "])
def test_an_empty_reply_of_the_model_server_is_said_and_recorded(agent, mock_model, nothing):
    mock_model.script(nothing)
    reply = chat(agent, "hello", session_id=f"plain-{len(nothing)}")
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == NO_ANSWER
    assert kinds_and_contents(agent, f"plain-{len(nothing)}") == [
        ("user_message", "hello"), ("error", "the model returned no text and no tool call"),
        ("agent_response", NO_ANSWER)]


def test_an_empty_streamed_reply_is_said_in_the_stream(agent, mock_model):
    mock_model.script({"parts": ["", " ", "\n"]})
    arrived = stream_all(agent, "hello", session_id="streamed")
    assert text_of(arrived) == NO_ANSWER
    assert arrived[-1][1] == "[DONE]"
    assert [kind for kind, _ in kinds_and_contents(agent, "streamed")] == ["user_message", "error", "agent_response"]


def test_an_empty_reply_after_a_tool_step_is_said_too(start, mock_model):
    """Scripted (DEBUG_MOCK_RESPONSES): a call to a tool the agent does not have, then nothing."""
    unknown = '```tool_call\n{"tool": "missing", "arguments": {}}\n```'
    scripted = start("agent", "empty-scripted", agent_env("empty-scripted", mock_model,
                                                          DEBUG_MOCK_RESPONSES=[unknown, ""]))
    reply = chat(scripted, "hello", session_id="scripted")
    assert reply.json()["choices"][0]["message"]["content"] == NO_ANSWER
    recorded = kinds_and_contents(scripted, "scripted")
    assert [kind for kind, _ in recorded][:2] == ["user_message", "tool_call"]
    assert recorded[-2:] == [("error", "the model returned no text and no tool call"), ("agent_response", NO_ANSWER)]
    assert mock_model.requests() == []
