"""Prometheus metrics of one agent (``GET /metrics``), with the standard ``prometheus_client``.

The agent's collaborators are wrapped rather than edited: ``metered_model``, ``metered_tools``
and ``metered_peers`` return objects that behave as the ModelClient, ToolCatalog and
PeerDirectory they wrap and count each call on the way; ``RequestMetrics`` is an ASGI
middleware that counts the work requests (``WORK_PATHS``). Each Runtime has its own registry,
so several agents in one process (tests) never share counters.

Names follow Prometheus conventions (base units in the name, ``_total`` counters) and the
OpenTelemetry GenAI semantic conventions where they define one (``gen_ai.client.*``, with the
dots of names and attributes as underscores, as OpenTelemetry's Prometheus exporter writes
them). docs/runtime.md lists every metric.
"""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Requests counted as work (the probes, the card and /metrics itself are not).
WORK_PATHS = frozenset({"/v1/chat/completions"})
# Seconds: a model call or a whole agentic loop may take minutes.
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# The OpenTelemetry GenAI buckets of gen_ai.client.token.usage.
TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
OK, ERROR = "ok", "error"
UNKNOWN_TOOL = "unknown"  # the label of a tool no MCP server offers (the model may name anything)


def outcome_of(status: int) -> str:
    """The outcome label of a work request's HTTP status."""
    if status < 400:
        return OK
    if status == 429:
        return "budget_exceeded"
    if status in (401, 403):
        return "unauthorized"
    if status < 500:
        return "bad_request"
    return ERROR


class Metrics:
    """The agent's metrics and the calls that record them."""

    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter("kaos_agent_requests", "Work requests answered, by outcome.",
                                ["outcome"], registry=registry)
        self.request_seconds = Histogram("kaos_agent_request_duration_seconds",
                                         "Time to answer a work request (a streamed one: to its last byte).",
                                         ["outcome"], buckets=SECONDS, registry=registry)
        self.in_flight = Gauge("kaos_agent_requests_in_flight", "Work requests being answered.",
                               registry=registry)
        self.sessions = Gauge("kaos_agent_active_sessions", "Sessions held in memory.", registry=registry)
        model = ["gen_ai_operation_name", "gen_ai_request_model"]
        self.model_calls = Counter("kaos_agent_model_calls", "Model calls, by model and outcome.",
                                   model + ["outcome"], registry=registry)
        self.model_seconds = Histogram("gen_ai_client_operation_duration_seconds",
                                       "GenAI operation duration (OpenTelemetry gen_ai.client.operation.duration).",
                                       model + ["outcome"], buckets=SECONDS, registry=registry)
        self.tokens = Counter("kaos_agent_model_tokens", "Tokens the model reported, by model and type "
                              "(input: prompt tokens, output: completion tokens).",
                              model + ["gen_ai_token_type"], registry=registry)
        self.token_usage = Histogram("gen_ai_client_token_usage",
                                     "Tokens per model call (OpenTelemetry gen_ai.client.token.usage).",
                                     model + ["gen_ai_token_type"], buckets=TOKENS, registry=registry)
        self.tool_calls = Counter("kaos_agent_tool_calls", "MCP tool calls, by tool and outcome.",
                                  ["tool", "outcome"], registry=registry)
        self.tool_seconds = Histogram("kaos_agent_tool_call_duration_seconds", "MCP tool call duration.",
                                      ["tool", "outcome"], buckets=SECONDS, registry=registry)
        self.delegations = Counter("kaos_agent_delegations", "Delegations to peer agents, by peer and outcome.",
                                   ["peer", "outcome"], registry=registry)
        self.delegation_seconds = Histogram("kaos_agent_delegation_duration_seconds", "Delegation duration.",
                                            ["peer", "outcome"], buckets=SECONDS, registry=registry)
        self.budget_rejections = Counter("kaos_agent_budget_rejections",
                                         "Model calls refused because a token budget was spent, by budget.",
                                         ["budget"], registry=registry)

    def request(self, outcome: str, seconds: float) -> None:
        self.requests.labels(outcome).inc()
        self.request_seconds.labels(outcome).observe(seconds)

    def model_call(self, model: str, outcome: str, seconds: float, usage: dict[str, int] | None) -> None:
        self.model_calls.labels("chat", model, outcome).inc()
        self.model_seconds.labels("chat", model, outcome).observe(seconds)
        if usage:
            for kind, field in (("input", "prompt_tokens"), ("output", "completion_tokens")):
                count = usage.get(field) or 0
                if count:
                    self.tokens.labels("chat", model, kind).inc(count)
                    self.token_usage.labels("chat", model, kind).observe(count)

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_seconds.labels(tool, outcome).observe(seconds)

    def delegation(self, peer: str, outcome: str, seconds: float) -> None:
        self.delegations.labels(peer, outcome).inc()
        self.delegation_seconds.labels(peer, outcome).observe(seconds)

    def budget_rejected(self, budget: str) -> None:
        self.budget_rejections.labels(budget).inc()

    def exposition(self, sessions: int | None = None) -> bytes:
        """The text format, with the session count as of now."""
        if sessions is not None:
            self.sessions.set(sessions)
        return generate_latest(self.registry)


class _Wrapper:
    """Behaves as the wrapped object; the subclass overrides the calls it counts."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class MeteredModel(_Wrapper):
    """A ModelClient whose ``complete`` and ``stream`` are counted and timed."""

    def __init__(self, inner: Any, metrics: Metrics, model_name: str) -> None:
        super().__init__(inner, metrics)
        self._model_name = model_name or "unknown"

    async def complete(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            reply = await self._inner.complete(*args, **kwargs)
        except BaseException:
            self._metrics.model_call(self._model_name, ERROR, time.perf_counter() - started, None)
            raise
        self._metrics.model_call(self._model_name, OK, time.perf_counter() - started, reply.usage)
        return reply

    async def stream(self, *args, **kwargs):
        started, usage, outcome = time.perf_counter(), None, ERROR
        try:
            async with aclosing(self._inner.stream(*args, **kwargs)) as deltas:
                async for delta in deltas:
                    if delta.usage:
                        usage = delta.usage
                    yield delta
            outcome = OK
        finally:
            self._metrics.model_call(self._model_name, outcome, time.perf_counter() - started, usage)


class MeteredTools(_Wrapper):
    """A ToolCatalog whose ``call`` is counted by tool (a tool no server offers: ``unknown``)."""

    async def call(self, tool: str, arguments: dict) -> str:
        started = time.perf_counter()
        outcome = ERROR
        try:
            result = await self._inner.call(tool, arguments)
            outcome = OK
            return result
        finally:
            label = tool if tool in self._inner._owner else UNKNOWN_TOOL
            self._metrics.tool_call(label, outcome, time.perf_counter() - started)


class MeteredPeers(_Wrapper):
    """A PeerDirectory whose ``delegate`` is counted by peer (only listed peers reach it)."""

    async def delegate(self, peer, *args, **kwargs) -> str:
        started = time.perf_counter()
        outcome = ERROR
        try:
            response = await self._inner.delegate(peer, *args, **kwargs)
            outcome = OK
            return response
        finally:
            self._metrics.delegation(peer.name, outcome, time.perf_counter() - started)


class RequestMetrics:
    """ASGI middleware: counts and times the requests to ``WORK_PATHS`` by outcome."""

    def __init__(self, app, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] not in WORK_PATHS:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_status(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight.dec()
            self.metrics.request(outcome_of(status), time.perf_counter() - started)
