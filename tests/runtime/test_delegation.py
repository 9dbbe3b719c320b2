"""Coordinator and worker runtimes delegating to each other over HTTP."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.processes import free_port

from .conftest import agent_env, chat, events


def delegate_block(agent: str, task: str) -> str:
    return f'I will delegate.\n```delegate\n{{"agent": "{agent}", "task": "{task}"}}\n```'


def card_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/.well-known/agent"


@pytest.fixture(scope="module")
def task_id() -> str:
    return f"LOOP_TASK_{int(time.time())}"


@pytest.fixture(scope="module")
def worker(start, mock_model, task_id):
    return start("agent", "loop-worker-del", agent_env(
        "loop-worker-del", mock_model, AGENT_DESCRIPTION="Worker for agentic loop tests",
        DEBUG_MOCK_RESPONSES=[f"Task {task_id} processed successfully by worker."],
    ))


@pytest.fixture(scope="module")
def coordinator(start, mock_model, worker, task_id):
    port = int(worker.url.rsplit(":", 1)[1])
    return start("agent", "loop-coord-del", agent_env(
        "loop-coord-del", mock_model, AGENTIC_LOOP_MAX_STEPS=5,
        PEER_AGENTS="loop-worker-del", PEER_AGENT_LOOP_WORKER_DEL_CARD_URL=card_url(port),
        DEBUG_MOCK_RESPONSES=[
            delegate_block("loop-worker-del", f"Process task {task_id}"),
            f"The worker has completed task {task_id}.",
            delegate_block("someone-else", "Sneaky task"),
        ],
    ))


def test_seed_delegation_and_memory_on_both_agents(coordinator, worker, mock_model, task_id):
    initial_worker_total = events(worker)["total"]
    reply = chat(coordinator, f"Please process task {task_id}")
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == f"The worker has completed task {task_id}."

    coord_events = events(coordinator)["events"]
    types = [e["event_type"] for e in coord_events]
    assert types == ["user_message", "delegation_request", "delegation_response", "agent_response"]
    request = coord_events[1]["content"]
    assert request == {"agent": "loop-worker-del", "task": f"Process task {task_id}"}
    assert coord_events[2]["content"]["response"] == f"Task {task_id} processed successfully by worker."

    worker_memory = events(worker)
    assert worker_memory["total"] > initial_worker_total
    received = [e for e in worker_memory["events"] if e["event_type"] == "task_delegation_received"]
    assert len(received) == 1 and received[0]["content"] == f"Process task {task_id}"
    assert received[0]["metadata"]["depth"] == 1
    assert task_id in " ".join(str(e["content"]) for e in worker_memory["events"])
    assert mock_model.requests() == []  # both agents answered from DEBUG_MOCK_RESPONSES


def test_card_lists_delegation_and_prompt_names_the_peer(coordinator):
    card = httpx.get(coordinator.url + "/.well-known/agent").json()
    assert "task_delegation" in card["capabilities"] and "tool_execution" not in card["capabilities"]


def test_delegation_only_reaches_listed_peers(coordinator, mock_model):
    mock_model.reset()
    reply = chat(coordinator, "try someone else", session_id="sneaky")
    assert reply.status_code == 200
    errors = events(coordinator, session_id="sneaky", event_type="delegation_error")["events"]
    assert len(errors) == 1 and "not an agent this agent may delegate to" in errors[0]["content"]["error"]
    assert events(coordinator, session_id="sneaky", event_type="delegation_request")["total"] == 0
    # The refusal went back to the model (the mock echoes it as the final answer).
    assert "refused" in reply.json()["choices"][0]["message"]["content"]


def test_peer_down_answers_200_with_delegation_error(start, mock_model):
    agent = start("agent", "lonely", agent_env(
        "lonely", mock_model, PEER_AGENTS="ghost", PEER_AGENT_GHOST_CARD_URL=card_url(free_port()),
        DEBUG_MOCK_RESPONSES=[delegate_block("ghost", "Haunt task 7")],
    ))
    reply = chat(agent, "ask the ghost", session_id="g")
    assert reply.status_code == 200
    content = reply.json()["choices"][0]["message"]["content"]
    assert "Delegation to ghost failed" in content and "cannot reach agent ghost" in content
    errors = events(agent, session_id="g", event_type="delegation_error")["events"]
    assert len(errors) == 1 and errors[0]["content"]["task"] == "Haunt task 7"


def test_a_b_a_loop_ends_at_the_depth_limit(start, mock_model):
    port_a, port_b = free_port(), free_port()
    common = {"MAX_DELEGATION_DEPTH": 3, "AGENTIC_LOOP_MAX_STEPS": 5}
    agent_a = start("agent", "ping", agent_env("ping", mock_model, PEER_AGENTS="pong",
                                                PEER_AGENT_PONG_CARD_URL=card_url(port_b), **common),
                    ready=False, port=port_a)
    agent_b = start("agent", "pong", agent_env("pong", mock_model, PEER_AGENTS="ping",
                                                PEER_AGENT_PING_CARD_URL=card_url(port_a), **common),
                    port=port_b)
    from tests.support.processes import wait_until_ok

    wait_until_ok(agent_a, "/ready")
    mock_model.reset()
    # Each agent's model asks to delegate to the other one; after that the mock echoes.
    mock_model.script(delegate_block("pong", "bounce"), delegate_block("ping", "bounce"),
                      delegate_block("pong", "bounce"), delegate_block("ping", "bounce"))
    reply = chat(agent_a, "start the loop", session_id="loop")
    assert reply.status_code == 200
    # ping(0) -> pong(1) -> ping(2) -> pong(3): pong at depth 3 may not delegate again.
    requests_a = events(agent_a, event_type="delegation_request")["total"]
    requests_b = events(agent_b, event_type="delegation_request")["total"]
    assert (requests_a, requests_b) == (2, 1)
    refused = events(agent_b, event_type="delegation_error")["events"]
    assert len(refused) == 1 and "depth limit" in refused[0]["content"]["error"]
    depths = [e["metadata"]["depth"] for e in events(agent_b, event_type="task_delegation_received")["events"]]
    assert sorted(depths) == [1, 3]
