"""A restart while a call waits for a decision: with the memory (and so the approvals) on a real
Redis the run resumes in the next process once the call is decided, and its answer lands in
memory; with local memory the waiting caller is told the approval is lost. Either way the
caller that waited on the stopped process gets an error, never silence."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.polling import wait_until
from tests.support.redis_server import RedisServer

from .approval_support import call, decide, gated_env, native, pending, tool_messages
from .conftest import chat, events


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


def test_restart_while_pending_on_redis_resumes_the_run(start, mock_model, approval_tools, redis_server):
    mock_model.reset()
    settings = gated_env("durable", mock_model, approval_tools, MEMORY_BACKEND="redis", REDIS_URL=redis_server.url,
                   MEMORY_KEY_PREFIX="kaos:test:durable")
    first = start("agent", "durable", settings)
    mock_model.script(native(call("delete_file", path="/srv/old")), "Resumed and deleted.")
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(chat, first, "clean up", session_id="restart-1")
        [approval] = pending(first, session_id="restart-1")
        first.stop()  # SIGTERM, as a rolling restart does
        stopped = answer.result(timeout=30)
    assert stopped.status_code == 503
    assert "resumes after the decision" in stopped.json()["error"]["message"]

    second = start("agent", "durable-2", settings)  # the next process: another port, the same Redis
    [still] = pending(second, session_id="restart-1")
    assert still["id"] == approval["id"] and still["status"] == "pending"
    assert decide(second, approval["id"], "approve", "after the restart").status_code == 200

    def answered() -> list:
        return [e["content"] for e in events(second, session_id="restart-1")["events"]
                if e["event_type"] == "agent_response"]

    assert wait_until(answered, 30, what="the resumed run's answer in memory") == ["Resumed and deleted."]
    assert tool_messages(mock_model.requests()[-1]) == ["deleted /srv/old"]
    timeline = [e["event_type"] for e in events(second, session_id="restart-1")["events"]]
    assert timeline.count("approval_requested") == 1 and timeline.count("tool_call") == 1
    assert timeline.index("approval_granted") < timeline.index("tool_call") < timeline.index("agent_response")
    assert redis_server.keys("kaos:test:durable:run*") == []  # the journal is gone once the run went on


def test_restart_while_pending_on_local_memory_answers_the_caller_with_an_error(start, mock_model, approval_tools):
    mock_model.reset()
    agent = start("agent", "volatile", gated_env("volatile", mock_model, approval_tools))
    mock_model.script(native(call("delete_file", path="/srv/x")), "never")
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(chat, agent, "x", session_id="lost-1")
        pending(agent, session_id="lost-1")
        agent.stop()
        stopped = answer.result(timeout=30)
    assert stopped.status_code == 503
    assert "lost" in stopped.json()["error"]["message"]
