"""Token budgets on real agent processes: over the limit (429, Retry-After, an OpenAI-style
error, a budget_exceeded event, a metric), stopped mid-loop at the next model call (a stream
too: one error frame, then [DONE]), per caller, on A2A by the authenticated caller, refused
until the wall clock's minute turns (and back under when it has, on an injected clock), and shared through Redis between processes.

The mock model reports 2 tokens (1 prompt + 1 completion) per plain reply."""

from __future__ import annotations

import json
import math
import time

import httpx
import openai
import pytest

from kaos_runtime.budget import Budget, BudgetExceeded, LocalCounts
from kaos_runtime.core.settings import BudgetSettings
from tests.support.redis_server import RedisServer

from .conftest import agent_env, chat, events
from .test_delegation import delegate_block


@pytest.fixture(autouse=True)
def clean_model(mock_model):
    mock_model.reset()


def assert_refused(response: httpx.Response, budget: str, window: str, limit: int, horizon: int) -> dict:
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["Retry-After"]) <= horizon
    error = response.json()["error"]
    assert error["type"] == "budget_exceeded" and error["code"] == "budget_exceeded"
    assert f"{budget} allows {limit} tokens per {window}" in error["message"]
    return error


def sample(agent, prefix: str) -> float:
    """The value of the /metrics sample whose line starts with ``prefix`` (0 if absent)."""
    for line in httpx.get(agent.url + "/metrics").text.splitlines():
        if line.startswith(prefix + " "):
            return float(line.split()[-1])
    return 0.0


def rejections(agent, budget: str) -> float:
    return sample(agent, f'kaos_agent_budget_rejections_total{{budget="{budget}"}}')


def requests_counted(agent, endpoint: str, outcome: str) -> float:
    return sample(agent, f'kaos_agent_requests_total{{endpoint="{endpoint}",outcome="{outcome}"}}')


def test_over_the_daily_budget_is_refused_before_the_model_is_called(start, mock_model):
    agent = start("agent", "budget-day", agent_env("budget-day", mock_model, BUDGET_TOKENS_PER_DAY=4))
    for _ in range(2):  # 2 tokens each: 4 used, the limit reached, not crossed
        assert chat(agent, "hello").status_code == 200
    calls = len(mock_model.requests())
    refused = chat(agent, "one more", headers={"X-Session-ID": "over"})
    assert_refused(refused, "agent", "day", 4, 86400)
    assert len(mock_model.requests()) == calls  # checked before the call: the model saw nothing
    event = events(agent, session_id="over", event_type="budget_exceeded")["events"][0]
    assert event["metadata"] == {"session_id": "over", "budget": "agent", "window": "day", "limit": 4,
                                 "used": 4, "retry_after": event["metadata"]["retry_after"]}
    assert rejections(agent, "agent") == 1
    # A streamed request is refused before its stream starts; the official client sees a RateLimitError.
    client = openai.OpenAI(base_url=agent.url + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.RateLimitError) as refusal:
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert refusal.value.code == "budget_exceeded"
    assert httpx.get(agent.url + "/metrics").status_code == 200 and rejections(agent, "agent") == 2
    assert httpx.get(agent.url + "/health").status_code == 200  # only model work is refused


def test_a_request_in_its_loop_stops_at_the_next_model_call(start, mock_model):
    agent = start("agent", "budget-loop", agent_env("budget-loop", mock_model, BUDGET_TOKENS_PER_DAY=2))
    # The first call (2 tokens) asks for a delegation the agent may not make; the second call is refused.
    mock_model.script(delegate_block("nobody", "anything"), "never sent")
    response = chat(agent, "delegate please", headers={"X-Session-ID": "loop"})
    assert_refused(response, "agent", "day", 2, 86400)
    assert len(mock_model.requests()) == 1
    types = [event["event_type"] for event in events(agent, session_id="loop")["events"]]
    assert types == ["user_message", "delegation_error", "budget_exceeded"]


def test_a_stream_that_runs_over_its_budget_ends_with_the_429_as_an_error_frame(start, mock_model):
    agent = start("agent", "budget-stream", agent_env("budget-stream", mock_model, BUDGET_TOKENS_PER_DAY=2))
    # As above, streamed: the 200 and the role chunk are sent when the second model call is refused.
    mock_model.script(delegate_block("nobody", "anything"), "never sent")
    body = {"messages": [{"role": "user", "content": "delegate please"}], "stream": True, "session_id": "streamed"}
    with httpx.stream("POST", agent.url + "/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200
        frames = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert frames[-1] == "[DONE]"
    chunks = [json.loads(frame) for frame in frames[:-1]]
    errors = [chunk["error"] for chunk in chunks if "error" in chunk]
    assert len(errors) == 1, frames
    # The body of the 429 a plain request gets, as the one error frame.
    assert errors[0]["type"] == "budget_exceeded" and errors[0]["code"] == "budget_exceeded"
    assert errors[0]["message"].startswith("token budget exceeded: agent allows 2 tokens per day")
    assert "internal error" not in json.dumps(chunks)
    assert len(mock_model.requests()) == 1
    types = [event["event_type"] for event in events(agent, session_id="streamed")["events"]]
    assert types == ["user_message", "delegation_error", "budget_exceeded"]
    assert rejections(agent, "agent") == 1
    assert requests_counted(agent, "/v1/chat/completions", "budget_exceeded") == 1
    assert requests_counted(agent, "/v1/chat/completions", "ok") == 0
    log = agent.log()
    assert "streamed request stopped: token budget exceeded" in log and "Traceback" not in log


def a2a_send(agent, text: str, context_id: str, key: str) -> dict:
    """message/send (A2A 0.3) with an API key: the task it answers with."""
    message = {"kind": "message", "role": "user", "messageId": f"{context_id}-{text}", "contextId": context_id,
               "parts": [{"kind": "text", "text": text}]}
    response = httpx.post(agent.url + "/a2a", timeout=60, headers={"Authorization": f"Bearer {key}"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_a2a_checks_the_budget_of_the_authenticated_caller(start, mock_model):
    agent = start("agent", "budget-a2a", agent_env("budget-a2a", mock_model, AUTH_API_KEYS="key-one,key-two",
                                                   BUDGET_CALLER_TOKENS_PER_DAY=2))
    one, two = {"Authorization": "Bearer key-one"}, {"Authorization": "Bearer key-two"}
    assert chat(agent, "spend key one", headers=one).status_code == 200  # key:1 has spent its 2 tokens
    calls = len(mock_model.requests())
    refused = a2a_send(agent, "over", "a2a-over", "key-one")  # the same caller over A2A: refused, not anonymous
    assert refused["status"]["state"] == "failed", refused
    reason = refused["status"]["message"]["parts"][0]["text"]
    assert reason.startswith("token budget exceeded: caller allows 2 tokens per day and 2 were used"), reason
    assert len(mock_model.requests()) == calls  # checked before the loop: the model saw nothing
    event = httpx.get(agent.url + "/memory/events", headers=one, timeout=10,
                      params={"session_id": "a2a-over", "event_type": "budget_exceeded"}).json()["events"][0]
    assert event["metadata"]["budget"] == "caller" and event["metadata"]["used"] == 2
    # Another key has a budget of its own, and what it spends over A2A counts against it.
    done = a2a_send(agent, "fine", "a2a-fine", "key-two")
    assert done["status"]["state"] == "completed" and done["artifacts"][0]["parts"][0]["text"] == "echo: fine"
    assert_refused(chat(agent, "key two again", headers=two), "caller", "day", 2, 86400)
    assert rejections(agent, "caller") == 2
    assert requests_counted(agent, "/a2a", "budget_exceeded") == 1 and requests_counted(agent, "/a2a", "ok") == 1
    log = agent.log()
    assert "refused: token budget exceeded" in log and "Traceback" not in log and "key-one" not in log


def test_each_caller_has_its_own_budget(start, mock_model):
    agent = start("agent", "budget-caller", agent_env("budget-caller", mock_model, BUDGET_CALLER_TOKENS_PER_DAY=2))
    peer = {"X-KAOS-Delegated-By": "planner"}
    assert chat(agent, "first", headers=peer).status_code == 200
    assert_refused(chat(agent, "second", headers=peer), "caller", "day", 2, 86400)
    assert chat(agent, "someone else").status_code == 200  # anonymous: a budget of its own
    assert_refused(chat(agent, "again"), "caller", "day", 2, 86400)
    assert rejections(agent, "caller") == 2


def seconds_to_next_minute(moment: float) -> int:
    """Retry-After for a per-minute window refused at ``moment`` (the seconds, rounded up, until it turns)."""
    return max(1, math.ceil(60 - moment % 60))


def test_refused_until_the_wall_clock_minute_turns(start, mock_model):
    """A real agent's window is the wall clock's minute: Retry-After is the time until it turns.
    That the agent answers again when it has turned is asserted on an injected clock
    (test_windows_turn_and_reported_usage_is_what_counts), so no test waits for a minute."""
    agent = start("agent", "budget-minute", agent_env("budget-minute", mock_model, BUDGET_TOKENS_PER_MINUTE=2))
    assert chat(agent, "first").status_code == 200
    before = time.time()
    refused = chat(agent, "second")
    if refused.status_code == 200:  # the minute turned between the two requests: spend this one's too
        before = time.time()
        refused = chat(agent, "third")
    after = time.time()
    assert_refused(refused, "agent", "minute", 2, 60)
    retry_after = int(refused.headers["Retry-After"])
    # Refused at some moment between before and after: Retry-After falls between what those two give.
    earliest, latest = seconds_to_next_minute(before), seconds_to_next_minute(after)
    if before // 60 == after // 60:
        assert latest <= retry_after <= earliest
    else:  # the minute turned while the request was answered
        assert retry_after <= earliest or retry_after >= latest


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("budget-redis")).start()
    yield server
    server.stop()


def test_budgets_are_shared_through_redis(start, mock_model, redis_server):
    shared = {"MEMORY_BACKEND": "redis", "REDIS_URL": redis_server.url, "BUDGET_TOKENS_PER_DAY": 4,
              "BUDGET_MODELAPI": "team/llm", "BUDGET_MODELAPI_TOKENS_PER_DAY": 6}
    one = start("agent", "shared-1", agent_env("shared", mock_model, MEMORY_KEY_PREFIX="t:shared", **shared))
    two = start("agent", "shared-2", agent_env("shared", mock_model, MEMORY_KEY_PREFIX="t:shared", **shared))
    other = start("agent", "other", agent_env("other", mock_model, MEMORY_KEY_PREFIX="t:other", **shared))
    assert chat(one, "a").status_code == 200
    assert chat(two, "b").status_code == 200  # two replicas of one agent: 4 tokens together
    assert_refused(chat(one, "c"), "agent", "day", 4, 86400)
    assert_refused(chat(two, "d"), "agent", "day", 4, 86400)
    assert chat(other, "e").status_code == 200  # another agent on the same ModelAPI: 6 tokens in all
    assert_refused(chat(other, "f"), "modelapi", "day", 6, 86400)


async def test_windows_turn_and_reported_usage_is_what_counts():
    now = [120.0]
    budget = Budget(BudgetSettings(tokens_per_minute=10), "a", LocalCounts(), clock=lambda: now[0])
    await budget.check()
    await budget.spend({"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12})
    with pytest.raises(BudgetExceeded) as exceeded:
        await budget.check()
    assert exceeded.value.retry_after == 60 and exceeded.value.used == 12
    now[0] = 179.5
    with pytest.raises(BudgetExceeded) as exceeded:
        await budget.check()
    assert exceeded.value.retry_after == 1
    now[0] = 180.0
    await budget.check()  # a new minute
    await budget.spend(None)  # a mocked reply reports nothing: nothing counted
    await budget.check()
    assert not Budget(BudgetSettings(), "a").enabled
