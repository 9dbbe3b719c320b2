"""GET /metrics after real traffic: a coordinator with an MCP tool server and a worker peer,
scraped and parsed with prometheus_client's own parser; A2A and /mcp requests counted by
endpoint; the active sessions counted in process (a scrape answers while Redis is down); and
METRICS_ENABLED=false."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kaos_runtime.core.metrics import ActiveSessions, Metrics, outcome_of
from kaos_runtime.core.settings import AgentSettings
from kaos_runtime.service.app import create_app
from tests.support.polling import eventually
from tests.support.redis_server import RedisServer

from .conftest import agent_env, chat
from .test_delegation import card_url, delegate_block
from .test_tools_and_limits import TOOLS, tool_block

MODEL = "ollama/smollm2:135m"
CHAT = "/v1/chat/completions"


def work(endpoint: str, outcome: str) -> tuple:
    """The key of kaos_agent_requests_total{endpoint, outcome} in a scrape."""
    return ("kaos_agent_requests_total", (("endpoint", endpoint), ("outcome", outcome)))


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
    assert work(CHAT, "ok") not in before  # nothing yet

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
    assert samples[work(CHAT, "ok")] == 3
    assert samples[work(CHAT, "bad_request")] == 1
    assert samples[("kaos_agent_request_duration_seconds_count", (("endpoint", CHAT), ("outcome", "ok")))] == 3
    assert samples[("kaos_agent_requests_in_flight", ())] == 0
    assert samples[("kaos_agent_active_sessions", ())] == 3  # worked on in the last 5 minutes; the bad request none
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
    assert worker_samples[work(CHAT, "ok")] == 1
    assert worker_samples[("kaos_agent_model_calls_total", chat_model + (("outcome", "ok"),))] == 1


def test_metric_names_follow_prometheus_conventions():
    metrics = Metrics()
    metrics.model_call("m", "ok", 0.01, {"prompt_tokens": 2, "completion_tokens": 3})
    metrics.tool_call("t", "ok", 0.01)
    metrics.delegation("p", "ok", 0.01)
    metrics.budget_rejected("agent")
    metrics.request(CHAT, "ok", 0.01)
    metrics.approval("approved", 12.5)
    families = {family.name: family for family in text_string_to_metric_families(metrics.exposition().decode())}
    for family in families.values():
        assert family.name.startswith(("kaos_agent_", "gen_ai_client_")), family.name
        assert family.documentation, family.name
        if family.type == "counter":
            assert any(sample.name.endswith("_total") for sample in family.samples), family.name
        if family.type == "histogram" and family.name != "gen_ai_client_token_usage":
            assert family.name.endswith("_seconds"), family.name  # durations in base units
    assert {"gen_ai_client_operation_duration_seconds", "gen_ai_client_token_usage",
            "kaos_agent_budget_rejections", "kaos_agent_active_sessions", "kaos_agent_approvals",
            "kaos_agent_approval_wait_seconds"} <= set(families)


@pytest.mark.parametrize(("status", "outcome"), [(200, "ok"), (400, "bad_request"), (413, "bad_request"),
                                                 (401, "unauthorized"), (429, "budget_exceeded"), (500, "error")])
def test_outcome_of_status(status, outcome):
    assert outcome_of(status) == outcome


def mcp_call(agent, message: str) -> dict:
    """One JSON-RPC POST to the agent's /mcp (stateless: no initialize needed): the tool's result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask_metrics-endpoints", "arguments": {"message": message}}}
    response = httpx.post(agent.url + "/mcp", json=body, timeout=30,
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def a2a_send(agent, text: str) -> dict:
    message = {"kind": "message", "role": "user", "messageId": text, "parts": [{"kind": "text", "text": text}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    return httpx.post(agent.url + "/a2a", json=body, timeout=30).json()["result"]


def test_a2a_and_mcp_requests_are_work_requests(start, mock_model):
    agent = start("agent", "metrics-endpoints", agent_env("metrics-endpoints", mock_model, BUDGET_TOKENS_PER_DAY=4))
    assert a2a_send(agent, "over a2a")["status"]["state"] == "completed"  # 2 tokens
    assert not mcp_call(agent, "over mcp")["isError"]  # 2 more: the budget is spent
    refused = mcp_call(agent, "refused over mcp")
    assert refused["isError"] and "token budget exceeded" in refused["content"][0]["text"]
    assert a2a_send(agent, "refused over a2a")["status"]["state"] == "failed"
    assert httpx.get(agent.url + "/mcp", timeout=10).status_code == 406
    samples = scrape(agent)
    assert samples[work("/a2a", "ok")] == 1 and samples[work("/a2a", "budget_exceeded")] == 1
    assert samples[work("/mcp", "ok")] == 1 and samples[work("/mcp", "budget_exceeded")] == 1
    assert samples[work("/mcp", "bad_request")] == 1
    assert not any(name == "kaos_agent_requests_total" and dict(labels)["endpoint"] == CHAT
                   for name, labels in samples)
    endpoints = {dict(labels)["endpoint"] for name, labels in samples if name == "kaos_agent_requests_total"}
    assert endpoints == {"/a2a", "/mcp"}  # the probes, cards and /metrics are not work
    assert samples[("kaos_agent_budget_rejections_total", (("budget", "agent"),))] == 2
    assert samples[("kaos_agent_active_sessions", ())] == 4  # each request its own session, refused ones too


async def test_work_whose_client_went_away_is_counted_cancelled(start, mock_model):
    """A streamed request whose client disconnects mid-stream, and a plain one whose client gives
    up: each request, and the model call it was waiting on, counts as cancelled, not ok or error."""
    agent = start("agent", "metrics-cancelled", agent_env("metrics-cancelled", mock_model))
    mock_model.reset()
    mock_model.script({"parts": ["Start", " and never finish"], "gate": "never"}, {"content": "late", "gate": "held"})
    prompt = [{"role": "user", "content": "go"}]
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", agent.url + CHAT, json={"model": "x", "stream": True, "messages": prompt}) \
                as response:
            async for line in response.aiter_lines():
                if "Start" in line:
                    break  # the answer has begun: the client goes away
        plain = asyncio.create_task(client.post(agent.url + CHAT, json={"model": "x", "messages": prompt}))
        await eventually(lambda: len(mock_model.streams()) == 2, what="the plain request waiting on its model")
        plain.cancel()
        await asyncio.gather(plain, return_exceptions=True)
    samples = await eventually(lambda: (found := scrape(agent)).get(work(CHAT, "cancelled")) == 2 and found,
                               what="two cancelled requests")
    assert work(CHAT, "ok") not in samples and work(CHAT, "bad_request") not in samples
    calls = {dict(labels)["outcome"]: value for (name, labels), value in samples.items()
             if name == "kaos_agent_model_calls_total"}
    assert calls == {"cancelled": 2}


def test_a_scrape_answers_while_redis_is_down(start, mock_model, tmp_path):
    """The active sessions are counted in process: /metrics reads no memory, so it answers (with
    every metric) while Redis is down, without a line in the log per scrape."""
    server = RedisServer(tmp_path / "redis").start()
    agent = start("agent", "metrics-redis", agent_env("metrics-redis", mock_model, MEMORY_BACKEND="redis",
                                                      REDIS_URL=server.url, MEMORY_KEY_PREFIX="test:metrics-redis",
                                                      MEMORY_REDIS_TIMEOUT_SECONDS=1))
    try:
        assert chat(agent, "one").status_code == 200 and chat(agent, "two").status_code == 200
        server.stop()
        assert chat(agent, "while down").status_code == 503
        logged = len(agent.log())
        for _ in range(3):
            samples = scrape(agent)
        assert samples[("kaos_agent_active_sessions", ())] == 3  # worked on, stored or not
        assert samples[work(CHAT, "ok")] == 2 and samples[work(CHAT, "error")] == 1
        assert len(agent.log()) == logged  # nothing logged per scrape
        assert "Traceback" not in agent.log()
    finally:
        server.stop()


def test_active_sessions_are_those_touched_within_the_window():
    now = [1000.0]
    active = ActiveSessions(window=300, most=3, clock=lambda: now[0])
    active.touch("a")
    now[0] += 200
    active.touch("b")
    active.touch("a")  # touched again: active for another 300 s
    assert active.count() == 2
    now[0] += 250  # b touched 250 s ago, a too
    active.touch("c")
    assert active.count() == 3
    now[0] += 60  # a and b 310 s ago
    assert active.count() == 1
    for name in "defg":
        active.touch(name)
    assert active.count() == 3  # bounded: the least recently touched are dropped


def test_metrics_can_be_turned_off(start, mock_model):
    agent = start("agent", "metrics-off", agent_env("metrics-off", mock_model, METRICS_ENABLED="false"))
    assert chat(agent, "hello").status_code == 200
    assert httpx.get(agent.url + "/metrics", timeout=10).status_code == 404
    assert "/metrics" not in httpx.get(agent.url + "/openapi.json", timeout=10).json()["paths"]
    # Nothing of the metrics is installed: no middleware, no wrapper around the collaborators.
    runtime_of = create_app(AgentSettings.from_env({"METRICS_ENABLED": "false"}))
    runtime = runtime_of.state.runtime
    assert runtime.metrics is None and runtime.budget.on_reject is None
    assert all(middleware.cls.__module__ != "kaos_runtime.core.metrics" for middleware in runtime_of.user_middleware)
    wrapped = (runtime.memory, runtime.model._inner, runtime.tools, runtime.peers._inner)
    assert not any(type(part).__module__ == "kaos_runtime.core.metrics" for part in wrapped)
