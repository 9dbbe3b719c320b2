"""GET /metrics after real traffic: a coordinator with an MCP tool server and a worker peer,
scraped and parsed with prometheus_client's own parser."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kaos_runtime.metrics import Metrics, outcome_of

from .conftest import agent_env, chat
from .test_delegation import card_url, delegate_block
from .test_tools_and_limits import TOOLS, tool_block

MODEL = "ollama/smollm2:135m"


def scrape(agent) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} of one scrape, parsed as Prometheus does."""
    response = httpx.get(agent.url + "/metrics", timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


@pytest.fixture(scope="module")
def network(start, mock_model):
    tools = start("mcp", "metrics-tools", {"MCP_TOOLS_STRING": TOOLS})
    worker = start("agent", "metrics-worker", agent_env("metrics-worker", mock_model))
    port = int(worker.url.rsplit(":", 1)[1])
    coordinator = start("agent", "metrics-coord", agent_env(
        "metrics-coord", mock_model, MCP_SERVERS="tools", MCP_SERVER_TOOLS_URL=tools.url + "/mcp",
        PEER_AGENTS="metrics-worker", PEER_AGENT_METRICS_WORKER_CARD_URL=card_url(port),
        MODEL_MAX_RETRIES=0,
    ))
    return coordinator, worker


def test_metrics_after_real_traffic(network, mock_model):
    coordinator, worker = network
    mock_model.reset()
    before = scrape(coordinator)
    assert ("kaos_agent_requests_total", (("outcome", "ok"),)) not in before  # nothing yet

    # A tool call, a delegation (the worker's model call comes third), a tool that fails, an answer.
    mock_model.script(tool_block("shout", '{"message": "hi"}'),
                      delegate_block("metrics-worker", "Do the thing"),
                      "Done by the worker.",
                      tool_block("explode", '{"reason": "test"}'),
                      tool_block("no_such_tool", "{}"),
                      "All done.")
    reply = chat(coordinator, "Work please")
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "All done."
    # A streamed answer, a bad request and a failing model call.
    mock_model.script("Streamed answer.")
    with httpx.stream("POST", coordinator.url + "/v1/chat/completions", timeout=30,
                      json={"messages": [{"role": "user", "content": "stream"}], "stream": True}) as streamed:
        assert streamed.status_code == 200
        assert "[DONE]" in "".join(streamed.iter_text())
    assert httpx.post(coordinator.url + "/v1/chat/completions", json={"messages": []}).status_code == 400
    mock_model.script({"status": 500})
    assert "model call failed" in chat(coordinator, "fail").json()["choices"][0]["message"]["content"]
    httpx.get(coordinator.url + "/health")  # probes are not work requests

    samples = scrape(coordinator)
    assert samples[("kaos_agent_requests_total", (("outcome", "ok"),))] == 3
    assert samples[("kaos_agent_requests_total", (("outcome", "bad_request"),))] == 1
    assert samples[("kaos_agent_request_duration_seconds_count", (("outcome", "ok"),))] == 3
    assert samples[("kaos_agent_requests_in_flight", ())] == 0
    assert samples[("kaos_agent_active_sessions", ())] == 3  # the bad request started none
    chat_model = (("gen_ai_operation_name", "chat"), ("gen_ai_request_model", MODEL))
    assert samples[("kaos_agent_model_calls_total", chat_model + (("outcome", "ok"),))] == 6
    assert samples[("kaos_agent_model_calls_total", chat_model + (("outcome", "error"),))] == 1
    assert samples[("gen_ai_client_operation_duration_seconds_count", chat_model + (("outcome", "ok"),))] == 6
    assert samples[("gen_ai_client_operation_duration_seconds_sum", chat_model + (("outcome", "ok"),))] > 0
    # The mock reports one prompt and one completion token per plain reply (and per streamed piece).
    assert samples[("kaos_agent_model_tokens_total", chat_model + (("gen_ai_token_type", "input"),))] == 6
    assert samples[("kaos_agent_model_tokens_total", chat_model + (("gen_ai_token_type", "output"),))] == 6
    assert samples[("gen_ai_client_token_usage_count", chat_model + (("gen_ai_token_type", "input"),))] == 6
    assert samples[("kaos_agent_tool_calls_total", (("outcome", "ok"), ("tool", "shout")))] == 1
    assert samples[("kaos_agent_tool_calls_total", (("outcome", "error"), ("tool", "explode")))] == 1
    assert samples[("kaos_agent_tool_calls_total", (("outcome", "error"), ("tool", "unknown")))] == 1
    assert samples[("kaos_agent_tool_call_duration_seconds_count", (("outcome", "ok"), ("tool", "shout")))] == 1
    assert samples[("kaos_agent_delegations_total", (("outcome", "ok"), ("peer", "metrics-worker")))] == 1
    assert samples[("kaos_agent_delegation_duration_seconds_count",
                    (("outcome", "ok"), ("peer", "metrics-worker")))] == 1

    worker_samples = scrape(worker)
    assert worker_samples[("kaos_agent_requests_total", (("outcome", "ok"),))] == 1
    assert worker_samples[("kaos_agent_model_calls_total", chat_model + (("outcome", "ok"),))] == 1


def test_metric_names_follow_prometheus_conventions():
    metrics = Metrics()
    metrics.model_call("m", "ok", 0.01, {"prompt_tokens": 2, "completion_tokens": 3})
    metrics.tool_call("t", "ok", 0.01)
    metrics.delegation("p", "ok", 0.01)
    metrics.budget_rejected("agent")
    metrics.request("ok", 0.01)
    families = {family.name: family for family in text_string_to_metric_families(metrics.exposition(0).decode())}
    for family in families.values():
        assert family.name.startswith(("kaos_agent_", "gen_ai_client_")), family.name
        assert family.documentation, family.name
        if family.type == "counter":
            assert any(sample.name.endswith("_total") for sample in family.samples), family.name
        if family.type == "histogram" and family.name != "gen_ai_client_token_usage":
            assert family.name.endswith("_seconds"), family.name  # durations in base units
    assert {"gen_ai_client_operation_duration_seconds", "gen_ai_client_token_usage",
            "kaos_agent_budget_rejections", "kaos_agent_active_sessions"} <= set(families)


@pytest.mark.parametrize(("status", "outcome"), [(200, "ok"), (400, "bad_request"), (413, "bad_request"),
                                                 (401, "unauthorized"), (429, "budget_exceeded"), (500, "error")])
def test_outcome_of_status(status, outcome):
    assert outcome_of(status) == outcome
