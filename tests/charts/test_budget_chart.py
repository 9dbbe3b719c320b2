"""spec.budget -> the agent chart's budget values -> BUDGET_* env vars (only the limits set)."""

from tests.charts.rendering import container, env_of, render

BASE = {"name": "coordinator", "modelAPI": {"name": "llm", "url": "http://modelapi-llm.team.svc.cluster.local:8000"}}


def budget_env(values: dict) -> dict:
    env = env_of(container(render("agent", {**BASE, **values}, namespace="team")))
    return {name: value for name, value in env.items() if name.startswith("BUDGET_")}


def test_no_budget_renders_no_variable():
    assert budget_env({}) == {}


def test_every_limit_and_the_shared_keys():
    env = budget_env({"budget": {"tokensPerMinute": 1000, "tokensPerDay": 2000000,
                                 "perCaller": {"tokensPerMinute": 50, "tokensPerDay": 0},
                                 "modelAPI": {"tokensPerMinute": 0, "tokensPerDay": 7}}})
    assert env == {"BUDGET_TOKENS_PER_MINUTE": "1000", "BUDGET_TOKENS_PER_DAY": "2000000",
                   "BUDGET_CALLER_TOKENS_PER_MINUTE": "50", "BUDGET_MODELAPI_TOKENS_PER_DAY": "7",
                   "BUDGET_MODELAPI": "team/llm", "BUDGET_KEY_PREFIX": "kaos:team:budget"}


def test_an_agent_budget_alone_names_no_modelapi():
    env = budget_env({"budget": {"tokensPerDay": 10}})
    assert env == {"BUDGET_TOKENS_PER_DAY": "10", "BUDGET_KEY_PREFIX": "kaos:team:budget"}
