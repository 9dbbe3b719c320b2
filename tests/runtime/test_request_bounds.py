"""Bounds a caller sets on one request (a Trigger's limits): X-KAOS-Max-Steps and
X-KAOS-Max-Tokens on top of the agent's own, X-KAOS-Stopped on an answer they cut short, and
X-KAOS-Trigger naming the caller a per-caller budget counts (trigger:<name>; with authentication,
as well as the principal)."""

import json

import pytest

from tests.runtime.conftest import agent_env, chat, events

NOPE = "```tool_call\n" + json.dumps({"tool": "nope", "arguments": {}}) + "\n```"


@pytest.fixture(scope="module")
def agent(start, mock_model):
    return start("agent", "bounded", agent_env("bounded", mock_model, AGENTIC_LOOP_MAX_STEPS=5))


def test_fewer_steps_than_the_agents_limit_stop_the_run(agent, mock_model):
    mock_model.reset()
    mock_model.script(*[NOPE] * 5)
    response = chat(agent, "loop", headers={"X-KAOS-Max-Steps": "2", "X-Session-ID": "steps"})
    assert response.status_code == 200 and response.headers["x-kaos-stopped"] == "max_steps"
    assert response.json()["choices"][0]["message"]["content"] == (
        "Stopped: reached the step limit of 2 model calls (X-KAOS-Max-Steps) without a final answer.")
    assert len(mock_model.requests()) == 2
    mock_model.reset()
    mock_model.script(*[NOPE] * 5)
    more = chat(agent, "loop", headers={"X-KAOS-Max-Steps": "9"})  # never more than the agent's own
    assert more.headers["x-kaos-stopped"] == "max_steps" and "limit of 5 model calls (AGENTIC_LOOP_MAX_STEPS)" in \
        more.json()["choices"][0]["message"]["content"]


def test_a_token_limit_stops_before_more_work(agent, mock_model):
    mock_model.reset()
    mock_model.script(*[NOPE] * 5)
    response = chat(agent, "loop", headers={"X-KAOS-Max-Tokens": "3", "X-Session-ID": "tokens"})
    assert response.headers["x-kaos-stopped"] == "max_tokens"
    assert response.json()["usage"]["total_tokens"] == 4  # two calls of 2 tokens: the second crossed 3
    assert "used 4 tokens, the request's limit is 3" in response.json()["choices"][0]["message"]["content"]
    assert [e["event_type"] for e in events(agent, session_id="tokens")["events"]][-1] == "agent_response"
    mock_model.reset()
    final = chat(agent, "hello", headers={"X-KAOS-Max-Tokens": "1"})  # a final answer is kept whole
    assert "x-kaos-stopped" not in final.headers and final.json()["choices"][0]["message"]["content"] == "echo: hello"


@pytest.mark.parametrize("header, value", [("X-KAOS-Max-Steps", "0"), ("X-KAOS-Max-Steps", "two"),
                                           ("X-KAOS-Max-Tokens", "-1")])
def test_a_bad_bound_is_a_400(agent, header, value):
    response = chat(agent, "x", headers={header: value})
    assert response.status_code == 400 and header in response.json()["detail"]


def test_a_triggers_runs_count_against_its_own_caller_budget(start, mock_model):
    mock_model.reset()
    budgeted = start("agent", "budgeted", agent_env("budgeted", mock_model, BUDGET_CALLER_TOKENS_PER_DAY=2))
    assert chat(budgeted, "one", headers={"X-KAOS-Trigger": "nightly"}).status_code == 200
    refused = chat(budgeted, "two", headers={"X-KAOS-Trigger": "nightly"})
    assert refused.status_code == 429 and "caller allows 2 tokens per day" in refused.json()["error"]["message"]
    assert chat(budgeted, "three", headers={"X-KAOS-Trigger": "weekly"}).status_code == 200  # another caller


def test_with_authentication_a_trigger_header_adds_a_budget_and_never_replaces_the_principal(start, mock_model):
    """A run sent with a Trigger's credential counts against the key and against trigger:<name>;
    a key holder naming a Trigger still spends its own budget; no token: 401 whatever the header."""
    mock_model.reset()
    guarded = start("agent", "guarded", agent_env("guarded", mock_model, AUTH_API_KEYS="key-one,key-two",
                                                  BUDGET_CALLER_TOKENS_PER_DAY=2))
    one, two = {"Authorization": "Bearer key-one"}, {"Authorization": "Bearer key-two"}
    assert chat(guarded, "run", headers={"X-KAOS-Trigger": "nightly"}).status_code == 401
    assert chat(guarded, "run", headers={**one, "X-KAOS-Trigger": "nightly"}).status_code == 200
    own = chat(guarded, "mine", headers={**one, "X-KAOS-Trigger": "weekly"})  # key-one's budget is spent
    assert own.status_code == 429 and "caller allows 2 tokens per day" in own.json()["error"]["message"]
    theirs = chat(guarded, "run", headers={**two, "X-KAOS-Trigger": "nightly"})  # nightly's budget is spent
    assert theirs.status_code == 429 and "caller allows 2 tokens per day" in theirs.json()["error"]["message"]
    assert chat(guarded, "run", headers={**two, "X-KAOS-Trigger": "weekly"}).status_code == 200
    assert "key-one" not in guarded.log() and "key-two" not in guarded.log()
