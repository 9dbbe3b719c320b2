"""The HTTP contract of one agent process talking to the mock model server."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest

from .conftest import agent_env, chat, events

MODEL = "ollama/smollm2:135m"


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "solo", agent_env(
        "solo", mock_model, AGENT_DESCRIPTION="A lone agent", MAX_REQUEST_BODY_BYTES=4000,
        MODEL_MAX_RETRIES=2, MODEL_RETRY_BACKOFF_SECONDS=0.05, MEMORY_CONTEXT_LIMIT=4,
    ))


pytestmark = pytest.mark.usefixtures("clean_model")


def test_health_ready_models_and_card(agent):
    health = httpx.get(agent.url + "/health").json()
    assert health["status"] == "healthy" and health["name"] == "solo" and isinstance(health["timestamp"], int)
    assert httpx.get(agent.url + "/ready").json()["status"] == "ready"
    assert httpx.get(agent.url + "/v1/models").json()["data"][0]["id"] == "solo"
    for path in ("/.well-known/agent", "/.well-known/agent.json"):
        card = httpx.get(agent.url + path).json()
        assert card["name"] == "solo" and card["description"] == "A lone agent"
        assert card["capabilities"] == ["message_processing", "task_execution"] and card["skills"] == []


def test_openai_client_plain_and_streaming(agent, mock_model):
    client = openai.OpenAI(base_url=agent.url + "/v1", api_key="unused")
    reply = client.chat.completions.create(model="solo", messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content == "echo: hello"
    assert reply.choices[0].finish_reason == "stop" and reply.id.startswith("chatcmpl-")
    text = "line one\nline two\n\n```text\nkept whole\n```"
    mock_model.script(text)
    stream = client.chat.completions.create(model="solo", messages=[{"role": "user", "content": "s"}], stream=True)
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_usage_adds_up_the_model_calls_of_the_request(agent, mock_model):
    mock_model.script('```delegate\n{"agent": "nobody", "task": "x"}\n```', "done")
    reply = chat(agent, "two model calls").json()
    assert reply["choices"][0]["message"]["content"] == "done"
    assert reply["usage"] == {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}


def test_model_name_is_passed_through_unchanged(agent, mock_model):
    assert chat(agent, "which model").status_code == 200
    sent = mock_model.requests()[-1]
    assert sent["model"] == MODEL
    assert sent["messages"][0]["role"] == "system" and sent["messages"][-1] == {"role": "user", "content": "which model"}


def test_the_requests_model_is_not_echoed(agent):
    """A model id the agent does not serve (or any) is not reflected: the answer names the agent."""
    planted = "<script>alert(1)</script>"
    for stream in (False, True):
        reply = chat(agent, "hi", model=planted, stream=stream)
        assert reply.status_code == 200 and planted not in reply.text and "script" not in reply.text
        if not stream:
            assert reply.json()["model"] == "solo"
    openai_reply = openai.OpenAI(base_url=agent.url + "/v1", api_key="unused").chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
    assert openai_reply.model == "solo" and openai_reply.choices[0].message.content == "echo: hello"


def test_memory_total_limit_and_filters(agent):
    session = "filters-session"
    for index in range(3):
        assert chat(agent, f"note {index}", session_id=session).status_code == 200
    everything = events(agent, session_id=session)
    assert everything["agent"] == "solo" and everything["total"] == 6
    newest = events(agent, session_id=session, limit=2)
    assert newest["total"] == 6
    assert [e["content"] for e in newest["events"]] == ["note 2", "echo: note 2"]
    users = events(agent, session_id=session, event_type="user_message")
    assert users["total"] == 3 and {e["event_type"] for e in users["events"]} == {"user_message"}
    for event in users["events"]:
        assert set(event) == {"event_id", "timestamp", "event_type", "content", "metadata"}
        assert event["timestamp"].endswith("+00:00")
    sessions = httpx.get(agent.url + "/memory/sessions").json()
    assert session in sessions["sessions"] and sessions["total"] == len(sessions["sessions"])


def test_session_continues_by_header_or_body(agent, mock_model):
    first = chat(agent, "my name is Ada")
    session = first.json()["session_id"]
    assert first.headers["X-Session-ID"] == session
    chat(agent, "what is my name?", headers={"X-Session-ID": session})
    history = mock_model.requests()[-1]["messages"]
    assert {"role": "user", "content": "my name is Ada"} in history
    assert {"role": "assistant", "content": "echo: my name is Ada"} in history
    chat(agent, "and again?", session_id=session)
    assert {"role": "user", "content": "what is my name?"} in mock_model.requests()[-1]["messages"]
    assert events(agent, session_id=session)["total"] == 6
    fresh = chat(agent, "new")
    assert fresh.json()["session_id"] != session
    assert {"role": "user", "content": "my name is Ada"} not in mock_model.requests()[-1]["messages"]


async def test_concurrent_requests_keep_their_events_apart(agent):
    async with httpx.AsyncClient(timeout=60) as client:
        async def one(index: int):
            body = {"messages": [{"role": "user", "content": f"parallel-{index}"}], "session_id": f"par-{index}"}
            return await client.post(agent.url + "/v1/chat/completions", json=body)

        replies = await asyncio.gather(*(one(index) for index in range(16)))
    for index, reply in enumerate(replies):
        assert reply.status_code == 200
        assert reply.json()["choices"][0]["message"]["content"] == f"echo: parallel-{index}"
        stored = events(agent, session_id=f"par-{index}")["events"]
        assert [e["content"] for e in stored] == [f"parallel-{index}", f"echo: parallel-{index}"]


def test_transient_model_errors_are_retried(agent, mock_model):
    mock_model.script({"status": 503}, {"status": 429}, "recovered")
    reply = chat(agent, "flaky")
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == "recovered"
    assert len(mock_model.requests()) == 3


def test_model_failure_answers_200_with_an_error_event(agent, mock_model):
    mock_model.script({"status": 400})
    reply = chat(agent, "doomed", session_id="doomed")
    assert reply.status_code == 200
    assert "model call failed" in reply.json()["choices"][0]["message"]["content"]
    assert "400" in reply.json()["choices"][0]["message"]["content"]
    assert events(agent, session_id="doomed", event_type="error")["total"] == 1
    assert len(mock_model.requests()) == 1


@pytest.mark.parametrize("body, status, detail", [
    (b"{not json", 400, "malformed JSON"),
    (b'{"model": "x"}', 400, "messages is required"),
    (b'{"messages": []}', 400, "must not be empty"),
    (b'{"messages": [{"role": "system", "content": "only rules"}]}', 400, "user message"),
    (b'{"messages": [{"role": "user", "content": {"a": 1}}]}', 400, "content"),
    (b'{"messages": "hello"}', 400, "must be a list"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": 1}', 400, "stream"),
    (b'{"messages": [{"role": "user", "content": "' + b"x" * 5000 + b'"}]}', 413, "MAX_REQUEST_BODY_BYTES"),
])
def test_bad_input_is_a_4xx_with_detail(agent, body, status, detail):
    reply = httpx.post(agent.url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert reply.status_code == status
    assert detail in reply.json()["detail"]


def test_oversized_chunked_body_is_refused(agent):
    def chunks():
        for _ in range(10):
            yield b"x" * 1000

    reply = httpx.post(agent.url + "/v1/chat/completions", content=chunks(),
                       headers={"Content-Type": "application/json"})
    assert reply.status_code == 413


def test_bad_headers_and_query_are_4xx(agent):
    reply = chat(agent, "x", headers={"X-KAOS-Delegation-Depth": "deep"})
    assert reply.status_code == 400 and "Delegation-Depth" in reply.json()["detail"]
    assert httpx.get(agent.url + "/memory/events", params={"limit": "lots"}).status_code == 400
    assert httpx.get(agent.url + "/v1/chat/completions").status_code == 405


def test_model_down_answers_200_with_an_error_event(start):
    from tests.support.processes import free_port

    agent = start("agent", "orphan", agent_env(
        "orphan", MODEL_API_URL=f"http://127.0.0.1:{free_port()}", MODEL_MAX_RETRIES=1,
        MODEL_RETRY_BACKOFF_SECONDS=0.01,
    ))
    reply = chat(agent, "anyone there?", session_id="s")
    assert reply.status_code == 200
    assert "cannot reach the model" in reply.json()["choices"][0]["message"]["content"]
    assert events(agent, event_type="error")["total"] == 1
