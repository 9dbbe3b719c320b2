"""Base functions of every agent through the gateway: health, ready, card, chat, memory."""

import httpx
import pytest

from e2e.conftest import chat, create_agent_resource, deploy_and_wait, memory_events

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]


@pytest.fixture(scope="module")
def base_agent(test_namespace, shared_modelapi) -> str:
    resource = create_agent_resource(test_namespace, "base-agent", shared_modelapi,
                                     description="The base functions agent")
    return deploy_and_wait(resource, test_namespace)


async def test_health_and_ready(base_agent):
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(f"{base_agent}/health")
        ready = await client.get(f"{base_agent}/ready")
    assert health.status_code == 200
    assert health.json()["status"] == "healthy"
    assert health.json()["name"] == "base-agent"
    assert isinstance(health.json()["timestamp"], int)
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


async def test_agent_card(base_agent):
    async with httpx.AsyncClient(timeout=30) as client:
        card = (await client.get(f"{base_agent}/.well-known/agent")).json()
        a2a = await client.get(f"{base_agent}/.well-known/agent.json")
    assert card["name"] == "base-agent"
    assert card["description"] == "The base functions agent"
    assert {"message_processing", "task_execution"} <= set(card["capabilities"])
    assert "tool_execution" not in card["capabilities"]
    assert "task_delegation" not in card["capabilities"]
    assert a2a.status_code == 200
    assert a2a.json()["name"] == "base-agent"


async def test_chat_goes_through_the_modelapi(base_agent, mock_model_server):
    response = await chat(base_agent, "hello through the whole stack")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["finish_reason"] == "stop"
    # the mock model echoes the last user message; LiteLLM sat in between
    assert body["choices"][0]["message"]["content"] == "echo: hello through the whole stack"
    sent = mock_model_server.requests()[-1]
    assert sent["messages"][-1]["content"] == "hello through the whole stack"


async def test_memory_records_the_conversation(base_agent):
    text = "remember the word kumquat"
    response = await chat(base_agent, text)
    assert response.status_code == 200
    users = await memory_events(base_agent, event_type="user_message")
    assert any(text in str(event["content"]) for event in users["events"])
    assert all(event["event_type"] == "user_message" for event in users["events"])
    everything = await memory_events(base_agent)
    types = [event["event_type"] for event in everything["events"]]
    assert "agent_response" in types
    assert everything["total"] >= users["total"] + 1
    for event in everything["events"]:
        assert {"event_id", "timestamp", "event_type", "content", "metadata"} <= set(event)
    async with httpx.AsyncClient(timeout=30) as client:
        sessions = (await client.get(f"{base_agent}/memory/sessions")).json()
    assert sessions["total"] >= 1


async def test_bad_requests_are_400_not_500(base_agent):
    async with httpx.AsyncClient(timeout=30) as client:
        empty = await client.post(f"{base_agent}/v1/chat/completions", json={"messages": []})
        malformed = await client.post(f"{base_agent}/v1/chat/completions", content=b"{not json",
                                      headers={"content-type": "application/json"})
    assert empty.status_code == 400
    assert "detail" in empty.json()
    assert malformed.status_code in (400, 422)
