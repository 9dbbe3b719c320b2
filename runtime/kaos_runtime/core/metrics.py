"""Prometheus metrics of one agent (``GET /metrics``), with the standard ``prometheus_client``.

The agent's collaborators are wrapped rather than edited: ``MeteredModel``, ``MeteredTools``,
``MeteredPeers`` and ``MeteredMemory`` behave as the ModelClient, ToolCatalog, PeerDirectory and
Memory they wrap and count each call on the way (the memory: which sessions this process works
on, for ``kaos_agent_active_sessions``); ``RequestMetrics`` is an ASGI middleware that counts the
work requests (``WORK_PATHS``) by endpoint and outcome. Each Runtime has its own registry, so
several agents in one process (tests) never share counters. With ``METRICS_ENABLED=false`` the
agent installs none of them (service/runtime.py).

The numbers are plain Python values that ``Metrics.collect`` (a prometheus_client custom
collector) turns into metric families at scrape time: a request updates a few dict and list
entries instead of prometheus_client's locked per-child values, which cost several times as much
per update (benchmarks/operating_bench.py measures what metrics, a budget and auth add).

A handler whose status line (200) was sent before it knew the outcome (a stream that meets a
spent budget, an A2A task or MCP call that a budget refuses, a client that went away mid-stream)
says it with ``set_outcome``. Work cancelled because its client went away (a request, and the
model calls, tool calls and delegations it had started) counts as ``cancelled``, neither ``ok``
nor ``error``.

Names follow Prometheus conventions (base units in the name, ``_total`` counters) and the
OpenTelemetry GenAI semantic conventions where they define one (``gen_ai.client.*``, with the
dots of names and attributes as underscores, as OpenTelemetry's Prometheus exporter writes
them). docs/runtime.md lists every metric.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import OrderedDict
from contextlib import aclosing
from itertools import accumulate
from typing import Any, Awaitable

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.utils import floatToGoString

from .forwarding import Forwarding, StreamUsage

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Requests counted as work (the probes, the cards and /metrics itself are not); the path is the
# ``endpoint`` label, so its values are these three.
WORK_PATHS = frozenset({"/v1/chat/completions", "/a2a", "/mcp"})
# Seconds: a model call or a whole agentic loop may take minutes.
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
# Seconds an approval waits for a person: up to hours.
APPROVAL_SECONDS = (0.1, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
# The OpenTelemetry GenAI buckets of gen_ai.client.token.usage.
TOKENS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
OK, ERROR, BUDGET_EXCEEDED, CANCELLED = "ok", "error", "budget_exceeded", "cancelled"
# kaos_agent_active_sessions: sessions this process worked on within this many seconds,
# tracking at most ACTIVE_SESSIONS_MAX of them (the gauge then reads that many).
ACTIVE_SESSION_SECONDS = 300
ACTIVE_SESSIONS_MAX = 100_000
# Where a handler puts a request's outcome for RequestMetrics (in the ASGI scope).
OUTCOME_KEY = "kaos.outcome"
UNKNOWN_TOOL = "unknown"  # the label of a tool no MCP server offers (the model may name anything)


def outcome_of(status: int) -> str:
    """The outcome label of a work request's HTTP status."""
    if status < 400:
        return OK
    if status == 429:
        return BUDGET_EXCEEDED
    if status in (401, 403):
        return "unauthorized"
    if status < 500:
        return "bad_request"
    return ERROR


def set_outcome(scope: dict | None, outcome: str) -> None:
    """Count the request of this ASGI scope with ``outcome`` whatever its HTTP status says."""
    if scope is not None:
        scope[OUTCOME_KEY] = outcome


class ActiveSessions:
    """The sessions this process touched within the last ``window`` seconds, oldest touch first.

    In process and O(1) per touch (no memory backend is read, so a scrape costs nothing and
    works while the memory is down); bounded to ``most`` sessions."""

    def __init__(self, window: float = ACTIVE_SESSION_SECONDS, most: int = ACTIVE_SESSIONS_MAX,
                 clock=time.monotonic) -> None:
        self.window, self.most, self.clock = window, most, clock
        self._touched: OrderedDict[str, float] = OrderedDict()

    def touch(self, session_id: str) -> None:
        now = self.clock()
        touched = self._touched
        touched[session_id] = now
        touched.move_to_end(session_id)
        if len(touched) > self.most:
            touched.popitem(last=False)
        self._expire(now)

    def _expire(self, now: float) -> None:
        touched, horizon = self._touched, now - self.window
        while touched and touched[next(iter(touched))] <= horizon:
            touched.popitem(last=False)

    def count(self) -> int:
        self._expire(self.clock())
        return len(self._touched)


class _Observed:
    """A histogram and the counter it implies, kept as plain numbers: an observation adds one to
    its bucket and its value to the sum, one list update on the request path (the agent's one
    event loop updates and scrapes, so no lock). The counter is the histogram's count (calls,
    requests) or, with ``counts="sum"``, its sum (tokens). Read by ``collect`` at scrape time."""

    def __init__(self, counter: tuple[str, str], histogram: tuple[str, str], labels: list[str],
                 buckets: tuple[float, ...], counts: str = "count") -> None:
        self.counter, self.histogram, self.labels, self.buckets = counter, histogram, labels, buckets
        self.bounds = [floatToGoString(bound) for bound in buckets] + ["+Inf"]
        self.counts_sum = counts == "sum"
        self.rows: dict[tuple[str, ...], list[float]] = {}  # labels: [count per bucket ..., +Inf, sum]

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        row = self.rows.get(labels)
        if row is None:
            row = self.rows[labels] = [0] * (len(self.buckets) + 2)
        row[bisect_left(self.buckets, value)] += 1
        row[-1] += value

    def collect(self):
        counter = CounterMetricFamily(*self.counter, labels=self.labels)
        histogram = HistogramMetricFamily(*self.histogram, labels=self.labels)
        for labels, row in list(self.rows.items()):
            buckets = list(zip(self.bounds, accumulate(row[:-1])))
            histogram.add_metric(list(labels), buckets, row[-1])
            counter.add_metric(list(labels), row[-1] if self.counts_sum else buckets[-1][1])
        return counter, histogram


class Metrics:
    """The agent's metrics and the calls that record them; the registry reads them at scrape time."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.active_sessions = ActiveSessions()
        self.budget_rejections: dict[str, int] = {}
        model = ["gen_ai_operation_name", "gen_ai_request_model"]
        self.requests = _Observed(
            ("kaos_agent_requests", "Work requests answered, by endpoint and outcome."),
            ("kaos_agent_request_duration_seconds", "Time to answer a work request (a streamed one: to its last byte)."),
            ["endpoint", "outcome"], SECONDS)
        self.model_calls = _Observed(
            ("kaos_agent_model_calls", "Model calls, by model and outcome."),
            ("gen_ai_client_operation_duration_seconds",
             "GenAI operation duration (OpenTelemetry gen_ai.client.operation.duration)."),
            model + ["outcome"], SECONDS)
        self.tokens = _Observed(
            ("kaos_agent_model_tokens",
             "Tokens the model reported, by model and type (input: prompt tokens, output: completion tokens)."),
            ("gen_ai_client_token_usage", "Tokens per model call (OpenTelemetry gen_ai.client.token.usage)."),
            model + ["gen_ai_token_type"], TOKENS, counts="sum")
        self.tool_calls = _Observed(
            ("kaos_agent_tool_calls", "MCP tool calls, by tool and outcome."),
            ("kaos_agent_tool_call_duration_seconds", "MCP tool call duration."), ["tool", "outcome"], SECONDS)
        self.delegations = _Observed(
            ("kaos_agent_delegations", "Delegations to peer agents, by peer and outcome."),
            ("kaos_agent_delegation_duration_seconds", "Delegation duration."), ["peer", "outcome"], SECONDS)
        self.approvals = _Observed(
            ("kaos_agent_approvals", "Approvals settled, by outcome (approved, rejected, expired)."),
            ("kaos_agent_approval_wait_seconds", "Time from an approval's request to its outcome."),
            ["outcome"], APPROVAL_SECONDS)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def collect(self):
        """The metric families as of now (prometheus_client's custom collector protocol)."""
        yield from self.requests.collect()
        yield GaugeMetricFamily("kaos_agent_requests_in_flight", "Work requests being answered.", self.in_flight)
        yield GaugeMetricFamily("kaos_agent_active_sessions",
                                f"Sessions this process worked on in the last {ACTIVE_SESSION_SECONDS} s "
                                f"(counted in process, per replica; at most {ACTIVE_SESSIONS_MAX}).",
                                self.active_sessions.count())
        for observed in (self.model_calls, self.tokens, self.tool_calls, self.delegations, self.approvals):
            yield from observed.collect()
        rejections = CounterMetricFamily("kaos_agent_budget_rejections",
                                         "Model calls refused because a token budget was spent, by budget.",
                                         labels=["budget"])
        for budget, count in list(self.budget_rejections.items()):
            rejections.add_metric([budget], count)
        yield rejections

    def request(self, endpoint: str, outcome: str, seconds: float) -> None:
        self.requests.observe((endpoint, outcome), seconds)

    def model_call(self, model: str, outcome: str, seconds: float, usage: dict[str, int] | None) -> None:
        self.model_calls.observe(("chat", model, outcome), seconds)
        if usage:
            for kind, field in (("input", "prompt_tokens"), ("output", "completion_tokens")):
                tokens = usage.get(field) or 0
                if tokens:
                    self.tokens.observe(("chat", model, kind), tokens)

    def tool_call(self, tool: str, outcome: str, seconds: float) -> None:
        self.tool_calls.observe((tool, outcome), seconds)

    def delegation(self, peer: str, outcome: str, seconds: float) -> None:
        self.delegations.observe((peer, outcome), seconds)

    def approval(self, outcome: str, seconds: float) -> None:
        self.approvals.observe((outcome,), seconds)

    def budget_rejected(self, budget: str) -> None:
        self.budget_rejections[budget] = self.budget_rejections.get(budget, 0) + 1

    def exposition(self) -> bytes:
        """The text format (the active sessions as of now)."""
        return generate_latest(self.registry)


def _failure(error: BaseException) -> str:
    """The outcome of a call that raised: cancelled (its request's client went away), else error."""
    return CANCELLED if isinstance(error, asyncio.CancelledError) else ERROR


class _Metered(Forwarding):
    """Behaves as the wrapped object; the subclass overrides the calls it counts."""

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        super().__init__(inner)
        self._metrics = metrics


class MeteredModel(_Metered):
    """A ModelClient whose ``complete`` and ``stream`` are counted and timed."""

    def __init__(self, inner: Any, metrics: Metrics, model_name: str) -> None:
        super().__init__(inner, metrics)
        self._model_name = model_name or "unknown"

    async def complete(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            reply = await self._inner.complete(*args, **kwargs)
        except BaseException as error:
            self._metrics.model_call(self._model_name, _failure(error), time.perf_counter() - started, None)
            raise
        self._metrics.model_call(self._model_name, OK, time.perf_counter() - started, reply.usage)
        return reply

    async def stream(self, *args, **kwargs):
        started, outcome = time.perf_counter(), ERROR
        seen = StreamUsage(self._inner.stream, *args, **kwargs)
        try:
            async with aclosing(seen.deltas()) as deltas:
                async for delta in deltas:
                    yield delta
            outcome = OK
        except asyncio.CancelledError:
            outcome = CANCELLED
            raise
        finally:
            self._metrics.model_call(self._model_name, outcome, time.perf_counter() - started, seen.usage)


class MeteredTools(_Metered):
    """A ToolCatalog whose ``call`` is counted by tool (a tool no server offers: ``unknown``)."""

    async def call(self, tool: str, arguments: dict) -> str:
        started = time.perf_counter()
        outcome = ERROR
        try:
            result = await self._inner.call(tool, arguments)
            outcome = OK
            return result
        except asyncio.CancelledError:
            outcome = CANCELLED
            raise
        finally:
            label = tool if tool in self._inner._owner else UNKNOWN_TOOL
            self._metrics.tool_call(label, outcome, time.perf_counter() - started)


class MeteredPeers(_Metered):
    """A PeerDirectory whose ``delegate`` is counted by peer (only listed peers reach it)."""

    async def delegate(self, peer, *args, **kwargs) -> str:
        started = time.perf_counter()
        outcome = ERROR
        try:
            response = await self._inner.delegate(peer, *args, **kwargs)
            outcome = OK
            return response
        except asyncio.CancelledError:
            outcome = CANCELLED
            raise
        finally:
            self._metrics.delegation(peer.name, outcome, time.perf_counter() - started)


class MeteredMemory(_Metered):
    """A Memory whose ``record`` notes the session as active (kaos_agent_active_sessions): every
    request records events of its session (with ``MEMORY_ENABLED=false`` it still asks to), so
    the sessions noted are those this process worked on, whether or not the memory could store."""

    def record(self, session_id: str, *args, **kwargs) -> Awaitable[None]:
        self._metrics.active_sessions.touch(session_id)
        return self._inner.record(session_id, *args, **kwargs)  # the caller awaits it


class RequestMetrics:
    """ASGI middleware: counts and times the requests to ``WORK_PATHS`` by endpoint and outcome
    (from the HTTP status, unless the handler said otherwise with ``set_outcome``)."""

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

        self.metrics.in_flight += 1
        try:
            await self.app(scope, receive, send_status)
        finally:
            self.metrics.in_flight -= 1
            outcome = scope.get(OUTCOME_KEY) or outcome_of(status)
            self.metrics.request(scope["path"], outcome, time.perf_counter() - started)
