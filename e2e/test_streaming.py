"""Streaming through the gateway, with the official openai client and as raw SSE."""

import json

import httpx
import pytest
from openai import AsyncOpenAI

from e2e.conftest import create_agent_resource, deploy_and_wait

pytestmark = [pytest.mark.e2e, pytest.mark.dataplane]

REPLY = "First line of the stream.\nSecond line, with \"quotes\" and ünïcödé."


@pytest.fixture(scope="module")
def streaming_agent(test_namespace, shared_modelapi) -> str:
    return deploy_and_wait(create_agent_resource(test_namespace, "streamer", shared_modelapi,
                                                 mock_responses=[REPLY] * 3), test_namespace)


async def test_openai_client_streams_through_gateway(streaming_agent):
    client = AsyncOpenAI(base_url=f"{streaming_agent}/v1", api_key="not-needed")
    stream = await client.chat.completions.create(
        model="streamer", messages=[{"role": "user", "content": "Stream to me."}], stream=True)
    parts, finish = [], None
    async for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    await client.close()
    assert "".join(parts) == REPLY
    assert finish == "stop"


async def test_openai_client_without_streaming(streaming_agent):
    client = AsyncOpenAI(base_url=f"{streaming_agent}/v1", api_key="not-needed")
    completion = await client.chat.completions.create(
        model="streamer", messages=[{"role": "user", "content": "Answer at once."}])
    await client.close()
    assert completion.choices[0].message.content == REPLY


async def test_raw_sse_passes_through_unchanged(streaming_agent):
    body = {"messages": [{"role": "user", "content": "Raw stream."}], "stream": True}
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", f"{streaming_agent}/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = [line async for line in response.aiter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(line.startswith("data: ") for line in lines)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == REPLY
