"""Issue 22, part 5, on the real model: an answer is never cut to nothing.

llama-cpp-python's server stopped a streamed completion as soon as any other request waited for
its model lock, its readiness probe (``GET /v1/models``, every 2 s under ``kaos up``) included:
an agent's first answer (its long system prompt not yet cached, so seconds of prompt evaluation)
ended with ``[DONE]`` before the first token, and the agent answered an empty text. The engine
(kaos_runtime.engines.llamacpp_server) now answers ``/v1/models`` without the lock and lets a
request wait for the one running instead of interrupting it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import httpx

from kaos.api import API_VERSION

from .conftest import HOSTED, MODEL, agent, events

ADD = 'def add(a: int, b: int) -> int:\n    """Add two integers."""\n    return a + b\n'
NO_ANSWER = "The model returned an empty answer (no text and no tool call)."


def test_probes_during_a_streamed_completion_neither_wait_nor_cut_it(plane):
    endpoint = plane.resource("ModelAPI", HOSTED)["status"]["endpoint"]
    # a prompt the server has not cached: its evaluation alone takes a while
    rules = " ".join(f"Rule {i}: answer about topic {i} with care." for i in range(40))
    body = {"model": MODEL, "stream": True, "max_tokens": 24,
            "messages": [{"role": "system", "content": f"{uuid.uuid4()} {rules}"},
                         {"role": "user", "content": "Tell me a story about the sea."}]}
    probes: list[tuple[float, float, int]] = []  # (start, seconds, status)
    streaming = threading.Event()
    done = threading.Event()

    def probe() -> None:
        streaming.wait(30)
        with httpx.Client(timeout=10) as client:
            while not done.is_set() and len(probes) < 400:
                began = time.monotonic()
                status = client.get(f"{endpoint}/v1/models").status_code
                probes.append((began, time.monotonic() - began, status))

    prober = threading.Thread(target=probe)
    prober.start()
    finishes, text = [], ""
    try:
        with httpx.stream("POST", f"{endpoint}/v1/chat/completions", json=body, timeout=120) as response:
            assert response.status_code == 200
            streaming.set()
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    choice = json.loads(line[6:])["choices"][0]
                    text += choice["delta"].get("content") or ""
                    finishes.append(choice.get("finish_reason"))
        ended = time.monotonic()
    finally:
        streaming.set()
        done.set()
        prober.join()
    during = [p for p in probes if p[0] < ended]
    assert during, "no probe ran while the completion streamed"
    assert all(status == 200 for _, _, status in probes)
    assert max(seconds for _, seconds, _ in during) < 1.0, during
    assert text.strip(), "the completion was cut before its first token"
    assert finishes[-1] in ("stop", "length"), f"the stream ended without a finish_reason: {finishes[-3:]}"


def test_the_first_streamed_chats_after_ready_answer(plane):
    """examples/local-llm's shape: a worker with tools and a coordinator that may delegate to it,
    each asked once, streamed, right after it is Ready."""
    worker = agent("first-worker")
    worker["spec"]["mcpServers"] = ["first-tools"]
    plane.apply({"apiVersion": API_VERSION, "kind": "MCPServer", "metadata": {"name": "first-tools"},
                 "spec": {"runtime": "python-string", "params": ADD}},
                worker, agent("first-coordinator", access=["first-worker"]))
    for name in ("first-worker", "first-coordinator"):
        plane.ready("Agent", name)
        url = plane.url("agent", name)
        body = {"messages": [{"role": "user", "content": "What is 2 + 3?"}], "stream": True, "session_id": "first"}
        text = ""
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    chunk = json.loads(line[6:])
                    text += (chunk["choices"][0]["delta"].get("content") or "") if chunk["choices"] else ""
        recorded = events(url, session_id="first")
        answers = [e["content"] for e in recorded if e["event_type"] == "agent_response"]
        print(name, repr(text[:120]))
        assert text.strip() and text != NO_ANSWER, (name, recorded)
        assert answers[-1] == text
