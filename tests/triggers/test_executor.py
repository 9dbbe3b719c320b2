"""The run executor against a real `kaos-runtime agent` process (its model: the mock model server)."""

import json
from datetime import datetime, timezone

import httpx
import pytest

from kaos.local.ports import free_port
from kaos.trigger_runner.executor import execute
from kaos.triggers.runs import FAILED, SUCCEEDED, TIMED_OUT, RunBook
from kaos.triggers.spec import Limits
from tests.runtime.conftest import agent_env, events
from tests.support.polling import eventually

NOW = datetime(2026, 3, 1, 2, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "reporter", agent_env("reporter", mock_model))


def new_run(book: RunBook):
    return book.start("schedule", NOW, "Allow", "new").run


async def test_a_run_sends_the_message_in_its_session_and_keeps_the_answer(agent, mock_model):
    mock_model.reset()
    mock_model.script("The nightly report: all green.")
    book = RunBook("nightly")
    run = new_run(book)
    async with httpx.AsyncClient() as client:
        result = await execute(client, agent.url, "nightly", run, "Write the nightly report.", Limits(timeout=30))
    assert (result.outcome, result.text) == (SUCCEEDED, "The nightly report: all green.")
    assert result.tokens == 2  # the mock model reports 2 tokens a call
    entry = book.finish(run.run_id, result.outcome, result.end, result.text, result.tokens)
    assert entry["sessionId"] == run.session_id and entry["summary"] == "The nightly report: all green."
    found = events(agent, session_id=run.session_id)["events"]
    assert [(e["event_type"], e["content"]) for e in found][:2] == [
        ("user_message", "Write the nightly report."), ("agent_response", "The nightly report: all green.")]
    assert mock_model.requests()[-1]["messages"][-1]["content"] == "Write the nightly report."


async def test_a_fixed_session_continues_one_conversation(agent, mock_model):
    mock_model.reset()
    book = RunBook("standup")
    async with httpx.AsyncClient() as client:
        for text in ("first", "second"):
            run = book.start("manual", NOW, "Allow", "standup-log").run
            assert (await execute(client, agent.url, "standup", run, text, Limits(timeout=30))).outcome == SUCCEEDED
    found = events(agent, session_id="standup-log", event_type="user_message")["events"]
    assert [e["content"] for e in found] == ["first", "second"]


async def test_a_run_past_its_timeout_is_timed_out_and_the_agent_stops_waiting(agent, mock_model):
    mock_model.reset()
    mock_model.script({"content": "too late", "gate": "slow"})
    run = new_run(RunBook("slow"))
    async with httpx.AsyncClient() as client:
        result = await execute(client, agent.url, "slow", run, "take your time", Limits(timeout=0.5))
    assert result.outcome == TIMED_OUT
    assert result.text == "timed out: the run took longer than limits.timeout (0.5 s)"
    await eventually(lambda: any(s["disconnected"] for s in mock_model.streams()), 10,
               what="the agent dropping its model call once the run was cancelled")
    mock_model.release("slow")


async def test_more_tokens_than_max_tokens_fails_the_run(agent, mock_model):
    mock_model.reset()
    run = new_run(RunBook("thrifty"))
    async with httpx.AsyncClient() as client:
        result = await execute(client, agent.url, "thrifty", run, "hello", Limits(timeout=30, max_tokens=1))
    assert result.outcome == FAILED and result.tokens == 2
    assert result.text.startswith("used 2 tokens, more than limits.maxTokens (1): echo: hello")


async def test_a_spent_budget_and_an_absent_agent_fail_the_run_with_the_reason(start, mock_model):
    mock_model.reset()
    frugal = start("agent", "frugal", agent_env("frugal", mock_model, BUDGET_TOKENS_PER_DAY=2))
    book = RunBook("daily")
    async with httpx.AsyncClient() as client:
        assert (await execute(client, frugal.url, "daily", new_run(book), "one", Limits(timeout=30))).outcome \
            == SUCCEEDED
        spent = await execute(client, frugal.url, "daily", new_run(book), "two", Limits(timeout=30))
        assert spent.outcome == FAILED
        assert spent.text.startswith("the agent answered 429: token budget exceeded: agent allows 2 tokens per day")
        absent = await execute(client, f"http://127.0.0.1:{free_port()}", "daily", new_run(book), "three",
                               Limits(timeout=5))
    assert absent.outcome == FAILED and absent.text.startswith("cannot reach the agent at http://127.0.0.1:")


async def test_a_run_over_max_steps_is_stopped_by_the_agent_and_failed(agent, mock_model):
    mock_model.reset()
    mock_model.script(*["```tool_call\n" + json.dumps({"tool": "nope", "arguments": {}}) + "\n```"] * 5)
    run = new_run(RunBook("stepper"))
    async with httpx.AsyncClient() as client:
        result = await execute(client, agent.url, "stepper", run, "loop", Limits(timeout=30, max_steps=2))
    assert result.outcome == FAILED
    assert result.text.startswith("stopped (max_steps): Stopped: reached the step limit of 2 model calls")
    assert len(mock_model.requests()) == 2


async def test_an_agent_with_authentication_takes_the_credential_and_a_401_says_what_to_set(start, mock_model):
    mock_model.reset()
    guarded = start("agent", "guarded", agent_env("guarded", mock_model, AUTH_API_KEYS="trigger-key"))
    book = RunBook("guarded")
    async with httpx.AsyncClient() as client:
        bare = await execute(client, guarded.url, "guarded", new_run(book), "hi", Limits(timeout=30))
        wrong = await execute(client, guarded.url, "guarded", new_run(book), "hi", Limits(timeout=30),
                              credential="not-the-key")
        good = await execute(client, guarded.url, "guarded", new_run(book), "hi", Limits(timeout=30),
                             credential="trigger-key")
    assert bare.outcome == FAILED and bare.text.startswith(
        "the agent requires authentication (401): set spec.credentials.secretKeyRef to a Secret key holding one of "
        "its API keys; it said: authentication required")
    assert wrong.outcome == FAILED and wrong.text.startswith(
        "the agent refused the token of spec.credentials.secretKeyRef (401)")
    assert "not-the-key" not in wrong.text
    assert (good.outcome, good.text) == (SUCCEEDED, "echo: hi")
