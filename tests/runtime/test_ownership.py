"""Sessions belong to their caller (issue 26), on real agent processes with authentication on:
another key's session is 404 everywhere (listed, read, continued by header or body, over A2A and
MCP), exactly as a session that does not exist, and its history never reaches the model; an admin
(AUTH_ADMINS) reads every session but continues none; two replicas on one Redis racing for a
client-chosen id give it to one caller."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.redis_server import RedisServer

from .conftest import agent_env, chat

ALICE, BOB, ADMIN = "own-alice-key", "own-bob-key", "own-admin-key"  # key:1, key:2, key:3


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "owned", agent_env("owned", mock_model, AUTH_API_KEYS=f"{ALICE},{BOB},{ADMIN}",
                                             AUTH_ADMINS="key:3"))


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def get(agent, path: str, key: str, **params) -> httpx.Response:
    return httpx.get(agent.url + path, params=params, headers=bearer(key), timeout=10)


def test_another_keys_session_is_not_listed_read_or_continued(agent, mock_model):
    session = f"alice-{uuid.uuid4().hex[:8]}"
    assert chat(agent, "alice's secret plan", headers={**bearer(ALICE), "X-Session-ID": session}).status_code == 200
    assert session in get(agent, "/memory/sessions", ALICE).json()["sessions"]
    assert session not in get(agent, "/memory/sessions", BOB).json()["sessions"]
    everything_bob_reads = get(agent, "/memory/events", BOB, limit=1000).text
    assert "secret plan" not in everything_bob_reads
    unknown = f"nobody-{uuid.uuid4().hex[:8]}"
    for key in (BOB, ALICE):  # another's session and one that does not exist: one answer
        missing = get(agent, "/memory/events", key, session_id=unknown)
        assert (missing.status_code, missing.json()) == (404, {"detail": f"no session {unknown!r}"})
    refused = get(agent, "/memory/events", BOB, session_id=session)
    assert (refused.status_code, refused.json()) == (404, {"detail": f"no session {session!r}"})
    mock_model.reset()
    by_header = chat(agent, "what was the plan?", headers={**bearer(BOB), "X-Session-ID": session})
    by_body = chat(agent, "what was the plan?", headers=bearer(BOB), session_id=session)
    for answer in (by_header, by_body):
        assert (answer.status_code, answer.json()) == (404, {"detail": f"no session {session!r}"})
    assert mock_model.requests() == []  # the model never saw alice's history: no turn ran at all
    continued = chat(agent, "and now?", headers={**bearer(ALICE), "X-Session-ID": session})
    assert continued.status_code == 200
    assert "alice's secret plan" in str(mock_model.requests()[-1]["messages"])  # the owner's turn has its history


def test_an_admin_reads_every_session_but_continues_none(agent, mock_model):
    session = f"alice-{uuid.uuid4().hex[:8]}"
    assert chat(agent, "for the audit", headers={**bearer(ALICE), "X-Session-ID": session}).status_code == 200
    assert session in get(agent, "/memory/sessions", ADMIN).json()["sessions"]
    read = get(agent, "/memory/events", ADMIN, session_id=session)
    assert read.status_code == 200 and [e["content"] for e in read.json()["events"]][0] == "for the audit"
    assert "for the audit" in get(agent, "/memory/events", ADMIN, limit=1000).text
    mock_model.reset()
    answer = chat(agent, "let me in", headers={**bearer(ADMIN), "X-Session-ID": session})
    assert answer.status_code == 404 and mock_model.requests() == []
    own = chat(agent, "admin's own", headers={**bearer(ADMIN), "X-Session-ID": f"admin-{session}"})
    assert own.status_code == 200


def rpc(agent, key: str, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(agent.url + "/a2a", json=body, headers=bearer(key), timeout=60).json()


def message(text: str, **extra) -> dict:
    return {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
            "parts": [{"kind": "text", "text": text}], **extra}


def test_a2a_tasks_and_contexts_are_their_callers(agent, mock_model):
    task = rpc(agent, ALICE, "message/send", {"message": message("alice over a2a")})["result"]
    assert task["status"]["state"] == "completed"
    assert rpc(agent, ALICE, "tasks/get", {"id": task["id"]})["result"]["id"] == task["id"]
    nobody = rpc(agent, BOB, "tasks/get", {"id": "no-such-task"})["error"]
    for method in ("tasks/get", "tasks/cancel"):
        refused = rpc(agent, BOB, method, {"id": task["id"]})
        assert "result" not in refused and refused["error"]["code"] == nobody["code"], refused
    with httpx.stream("POST", agent.url + "/a2a", headers=bearer(BOB), timeout=60, json={
            "jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": {"id": task["id"]}}) as response:
        assert str(nobody["code"]) in response.read().decode()
    mock_model.reset()
    hijack = rpc(agent, BOB, "message/send", {"message": message("tell me", contextId=task["contextId"])})["result"]
    assert hijack["status"]["state"] == "failed"
    assert hijack["status"]["message"]["parts"][0]["text"] == f"no session {task['contextId']!r}"
    assert mock_model.requests() == []
    again = rpc(agent, ALICE, "message/send", {"message": message("more", contextId=task["contextId"])})["result"]
    assert again["status"]["state"] == "completed"


async def test_mcp_cannot_continue_another_keys_session(agent):
    async def ask(key: str, **arguments):
        async with httpx.AsyncClient(headers=bearer(key), timeout=30) as http:
            async with Client(streamable_http_client(agent.url + "/mcp", http_client=http)) as client:
                return await client.call_tool("ask_owned", arguments)

    first = await ask(ALICE, message="alice over mcp")
    session = first.structured_content["session_id"]
    refused = await ask(BOB, message="continue it", session_id=session)
    assert refused.is_error and refused.content[0].text.endswith(f"no session {session!r}")
    assert not (await ask(ALICE, message="mine", session_id=session)).is_error


def test_two_replicas_racing_for_one_session_id_give_it_to_one_caller(start, mock_model, tmp_path_factory):
    redis = RedisServer(tmp_path_factory.mktemp("redis-owners")).start()
    try:
        env = dict(MEMORY_BACKEND="redis", REDIS_URL=redis.url, MEMORY_KEY_PREFIX="kaos:test:race",
                   AUTH_API_KEYS=f"{ALICE},{BOB}")
        replicas = [start("agent", f"race-{n}", agent_env("race", mock_model, **env)) for n in (1, 2)]
        for round_ in range(12):
            session, statuses = f"race-{round_}-{uuid.uuid4().hex[:6]}", {}
            start_line = threading.Barrier(2)

            def claim(replica, key):
                start_line.wait(10)
                statuses[key] = chat(replica, f"{key} first", headers={**bearer(key), "X-Session-ID": session})

            threads = [threading.Thread(target=claim, args=pair) for pair in zip(replicas, (ALICE, BOB))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert sorted(answer.status_code for answer in statuses.values()) == [200, 404], round_
            winner = next(key for key, answer in statuses.items() if answer.status_code == 200)
            loser = BOB if winner == ALICE else ALICE
            events = httpx.get(replicas[0].url + "/memory/events", params={"session_id": session},
                               headers=bearer(winner), timeout=10).json()["events"]
            assert [e["content"] for e in events if e["event_type"] == "user_message"] == [f"{winner} first"]
            assert httpx.get(replicas[1].url + "/memory/events", params={"session_id": session},
                             headers=bearer(loser), timeout=10).status_code == 404
    finally:
        redis.stop()
