"""Agents on the redis memory backend, as real processes with a real redis-server.

The same HTTP answers as the local backend; a session continued on another replica; a
process killed mid-session and restarted; two replicas writing to one session at once;
Redis going away and coming back; bounded keys and RSS under load.
"""

from __future__ import annotations

import json
import os
import threading

import httpx
import pytest

from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer

from .conftest import agent_env, chat, events

SLOW_TOOL = '''
import time

def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "slept"
'''


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


def redis_env(name: str, model, server: RedisServer, prefix: str, **extra) -> dict:
    return agent_env(name, model, MEMORY_BACKEND="redis", REDIS_URL=server.url, MEMORY_KEY_PREFIX=prefix, **extra)


def _normal(answer: dict) -> dict:
    """An answer without what differs by nature between two agents: event ids and times."""
    for event in answer.get("events", []):
        event.pop("event_id")
        event.pop("timestamp")
    return answer


def memory_answers(agent) -> list:
    queries = [{}, {"limit": 3}, {"limit": 0}, {"session_id": "s2"}, {"session_id": "s2", "limit": 2},
               {"event_type": "user_message"}, {"event_type": "agent_response", "limit": 1},
               {"session_id": "s4", "event_type": "user_message"}, {"session_id": "unknown"}, {"limit": 1000}]
    answers = [_normal(events(agent, **query)) for query in queries]
    answers.append(httpx.get(agent.url + "/memory/sessions").json())
    return answers


def test_memory_endpoints_answer_identically_on_both_backends(start, mock_model, redis_server):
    bounds = {"MEMORY_MAX_SESSIONS": 3, "MEMORY_MAX_SESSION_EVENTS": 5}
    local = start("agent", "twin", agent_env("twin", mock_model, **bounds))
    shared = start("agent", "twin", redis_env("twin", mock_model, redis_server, "test:twin", **bounds))
    for agent in (local, shared):
        for session, text in [("s1", "a"), ("s2", "b"), ("s1", "c"), ("s3", "d"), ("s2", "e"), ("s2", "f"),
                              ("s4", "g"), ("s2", "h")]:
            assert chat(agent, text, session_id=session).status_code == 200
    mine, theirs = memory_answers(local), memory_answers(shared)
    assert mine == theirs
    assert mine[-1]["sessions"] == ["s3", "s4", "s2"] and mine[3]["total"] == 5


def test_session_continues_on_another_replica(start, mock_model, redis_server):
    env = redis_env("replicated", mock_model, redis_server, "test:replicated")
    one, two = start("agent", "replicated", env), start("agent", "replicated", env)
    first = chat(one, "my name is Ada").json()
    session = first["session_id"]
    mock_model.reset()
    assert chat(two, "what is my name?", session_id=session).status_code == 200
    sent = mock_model.requests()[-1]["messages"]
    assert {"role": "user", "content": "my name is Ada"} in sent
    assert {"role": "assistant", "content": "echo: my name is Ada"} in sent
    seen_by_one, seen_by_two = events(one, session_id=session), events(two, session_id=session)
    assert seen_by_one == seen_by_two and seen_by_one["total"] == 4
    assert [e["content"] for e in seen_by_one["events"]] == [
        "my name is Ada", "echo: my name is Ada", "what is my name?", "echo: what is my name?"]


def test_killed_mid_request_then_restarted_keeps_every_event(start, mock_model, redis_server):
    tools = start("mcp", "sleepy-tools", {"MCP_TOOLS_STRING": SLOW_TOOL})
    env = redis_env("phoenix", mock_model, redis_server, "test:phoenix", MCP_SERVERS="tools",
                    MCP_SERVER_TOOLS_URL=tools.url + "/mcp")
    agent = start("agent", "phoenix", env)
    session = "long-conversation"
    for text in ("one", "two"):
        assert chat(agent, text, session_id=session).status_code == 200
    mock_model.script('```tool_call\n{"tool": "slow", "arguments": {"seconds": 30}}\n```')
    pending = threading.Thread(target=lambda: _ignore_errors(lambda: chat(agent, "three", session_id=session)))
    pending.start()
    wait_until(lambda: any(e["event_type"] == "tool_call" for e in events(agent, session_id=session)["events"]),
               20, what="the tool call recorded")
    agent.process.kill()  # SIGKILL in the middle of the request: no shutdown of any kind
    agent.process.wait(timeout=10)
    pending.join(timeout=30)
    mock_model.reset()
    restarted = start("agent", "phoenix", env)
    assert chat(restarted, "four", session_id=session).status_code == 200
    kept = events(restarted, session_id=session)
    assert [(e["event_type"], e["content"]) for e in kept["events"]] == [
        ("user_message", "one"), ("agent_response", "echo: one"),
        ("user_message", "two"), ("agent_response", "echo: two"),
        ("user_message", "three"), ("tool_call", {"tool": "slow", "arguments": {"seconds": 30}}),
        ("user_message", "four"), ("agent_response", "echo: four"),
    ]
    given = [m["content"] for m in mock_model.requests()[-1]["messages"] if m["role"] != "system"]
    assert given == ["one", "echo: one", "two", "echo: two", "three", "four"]


def _ignore_errors(call) -> None:
    try:
        call()
    except httpx.HTTPError:
        pass


def test_two_replicas_writing_to_one_session_lose_nothing_and_keep_order(start, mock_model, redis_server):
    env = redis_env("pair", mock_model, redis_server, "test:pair", MEMORY_MAX_SESSION_EVENTS=1000)
    replicas = {"A": start("agent", "pair", env), "B": start("agent", "pair", env)}
    session, per_writer = "together", 40
    failures: list[str] = []

    def writer(name: str) -> None:
        with httpx.Client(timeout=30) as client:
            for index in range(per_writer):
                body = {"messages": [{"role": "user", "content": f"{name}-{index}"}], "session_id": session}
                response = client.post(replicas[name].url + "/v1/chat/completions", json=body)
                if response.status_code != 200:
                    failures.append(response.text)

    threads = [threading.Thread(target=writer, args=(name,)) for name in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures
    stored = events(replicas["A"], session_id=session, limit=1000)
    assert stored["total"] == 2 * 2 * per_writer
    contents = [e["content"] for e in stored["events"] if e["event_type"] == "user_message"]
    for name in replicas:
        assert [c for c in contents if c.startswith(name + "-")] == [f"{name}-{i}" for i in range(per_writer)]
    answers = [e["content"] for e in stored["events"] if e["event_type"] == "agent_response"]
    for name in replicas:  # each answer follows its own question
        assert [a for a in answers if a.startswith(f"echo: {name}-")] == [f"echo: {name}-{i}" for i in range(per_writer)]


def test_redis_going_away_is_a_503_then_an_error_event_and_recovery(start, mock_model, tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    agent = start("agent", "weathered", redis_env("weathered", mock_model, server, "test:weathered",
                                                   MEMORY_REDIS_TIMEOUT_SECONDS=1))
    pid = agent.process.pid
    try:
        assert chat(agent, "before", session_id="storm").status_code == 200
        server.stop()
        down = chat(agent, "during", session_id="storm")
        assert down.status_code == 503 and down.headers["Retry-After"] == "1"
        # One body for this 503, plain or streamed: OpenAI's error shape (the stream's error frame too).
        error = down.json()["error"]
        assert error["type"] == "service_unavailable" and error["code"] == 503
        detail = error["message"]
        assert detail.startswith("agent memory unavailable: Redis at 127.0.0.1:") and "try again" in detail
        streamed = chat(agent, "during, streamed", session_id="storm", stream=True)
        assert streamed.status_code == 503 and streamed.json()["error"]["message"].startswith("agent memory unavailable")
        listing = httpx.get(agent.url + "/memory/events")
        assert listing.status_code == 503 and "Redis" in listing.json()["error"]["message"]
        assert httpx.get(agent.url + "/health").status_code == 200
        server = RedisServer(tmp_path / "redis", port=server.port).start()  # empty: Redis kept nothing on disk
        back = chat(agent, "after", session_id="storm")
        assert back.status_code == 200 and agent.process.pid == pid and agent.process.poll() is None
        stored = events(agent, session_id="storm")
        assert [e["event_type"] for e in stored["events"]] == ["error", "user_message", "agent_response"]
        assert "unavailable" in stored["events"][0]["content"]
        log = agent.log()
        assert "Traceback" not in log and "agent memory unavailable" in log
    finally:
        server.stop()


def test_redis_going_away_mid_stream_ends_the_stream_with_a_503_error(start, mock_model, tmp_path):
    """A stream has begun (200 sent) when Redis goes: the client gets an OpenAI-style error frame
    saying so, then the end of the stream; the log has one line, no traceback."""
    server = RedisServer(tmp_path / "redis").start()
    agent = start("agent", "midstream", redis_env("midstream", mock_model, server, "test:midstream",
                                                   MEMORY_REDIS_TIMEOUT_SECONDS=1))
    mock_model.reset()
    mock_model.script({"parts": ["The answer", " comes", " later"], "gate": "outage"})
    body = {"messages": [{"role": "user", "content": "during a stream"}], "stream": True, "session_id": "gust"}
    try:
        with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body, timeout=30) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            wait_until(lambda: mock_model.streams() and mock_model.streams()[-1]["sent"] >= 1, 10,
                       what="the model's first piece sent")
            server.stop()
            mock_model.release("outage")
            frames = [line.removeprefix("data: ") for line in lines if line]
        assert frames[-1] == "[DONE]"
        errors = [json.loads(f)["error"] for f in frames[:-1] if "error" in json.loads(f)]
        assert len(errors) == 1 and errors[0]["code"] == 503 and errors[0]["type"] == "service_unavailable"
        assert errors[0]["message"].startswith("agent memory unavailable: Redis at 127.0.0.1:")
        server = RedisServer(tmp_path / "redis", port=server.port).start()
        assert chat(agent, "after", session_id="gust").status_code == 200
        kinds = [e["event_type"] for e in events(agent, session_id="gust")["events"]]
        assert kinds[0] == "error" and kinds[-2:] == ["user_message", "agent_response"]
        log = agent.log()
        assert "Traceback" not in log and "streamed request stopped: agent memory unavailable" in log
    finally:
        server.stop()


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def test_memory_stays_bounded_under_load(start, mock_model, redis_server):
    """10,000 requests, new sessions all along (benchmarks/memory_bench.py prints the figures)."""
    agent = start("agent", "soaked", redis_env("soaked", mock_model, redis_server, "test:soaked",
                                               MEMORY_MAX_SESSIONS=50, MEMORY_MAX_SESSION_EVENTS=10))
    body = {"messages": [{"role": "user", "content": "x" * 200}]}
    with httpx.Client(timeout=30) as client:
        def send(count: int) -> None:
            for _ in range(count):
                assert client.post(agent.url + "/v1/chat/completions", json=body).status_code == 200

        send(1000)
        warm = rss_kib(agent.process.pid)
        send(9000)
        loaded = rss_kib(agent.process.pid)
    assert loaded <= warm * 1.10, f"RSS grew from {warm} KiB to {loaded} KiB"
    keys = redis_server.keys("test:soaked:*")
    assert len(keys) <= 50 + 2, len(keys)
    assert events(agent)["total"] == 50 * 2
    assert os.path.exists(f"/proc/{agent.process.pid}")
