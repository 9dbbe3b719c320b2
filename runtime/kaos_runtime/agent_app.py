"""The agent's FastAPI service: the HTTP contract of docs/runtime.md.

Handlers take the raw request and return ready-made responses: validation is done by
`chat_request` (clear 4xx errors), and skipping pydantic models keeps the per-request cost
low (see docs/runtime.md, "Performance").
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import Response

from . import a2a_server, agent_mcp, openai_format, openapi
from .agent_loop import Agent, LoopRequest
from .auth import BearerAuth, CredentialedPeers, Verifier
from .budget import BudgetedModel, BudgetExceeded, caller_of, create_budget
from .chat_request import (
    SESSION_HEADER,
    BadRequest,
    parse_chat_body,
    parse_depth,
    parse_limit,
    parse_session_header,
)
from .errors import describe
from .http import HttpClient
from .mcp_client import ToolCatalog
from .memory import MemoryUnavailable, create_memory, new_session_id
from .metrics import CONTENT_TYPE, MeteredMemory, MeteredModel, MeteredPeers, MeteredTools, Metrics, RequestMetrics
from .model import ModelClient
from .peers import DEPTH_HEADER, PeerDirectory
from .public_url import public_base_url
from .settings import AgentSettings
from .streaming import ChatStream, ClientGone, until_disconnected
from .telemetry import Telemetry

log = logging.getLogger("kaos_runtime.agent")

STARTUP_DISCOVERY_SECONDS = 10.0
DEFAULT_EVENTS_LIMIT = 100


def _json(payload, status: int = 200, headers: dict | None = None) -> Response:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def agent_card(config: AgentSettings, url: str, skills: list[dict]) -> dict:
    capabilities = ["message_processing", "task_execution"]
    if config.mcp_servers:
        capabilities.append("tool_execution")
    if config.peers or config.a2a_peers:
        capabilities.append("task_delegation")
    return {
        "name": config.name,
        "description": config.description,
        "url": url,
        "skills": skills,
        "capabilities": capabilities,
    }


class Runtime:
    """Everything one agent process holds: memory, model client, tools, peers, readiness."""

    def __init__(self, config: AgentSettings, telemetry: Telemetry | None = None) -> None:
        self.config = config
        self.telemetry = telemetry or Telemetry()
        self.http = HttpClient()
        self.memory = create_memory(config.memory, config.name)
        self.model = ModelClient(config)
        self.tools = ToolCatalog(config.mcp_servers, config.tool_timeout)
        self.peers = PeerDirectory(config.peers, self.http, config.peer_timeout, config.a2a_peers)
        # METRICS_ENABLED=false: no Metrics, no wrapper, no middleware, no /metrics.
        self.metrics = Metrics() if config.metrics_enabled else None
        if self.metrics is not None:
            self.memory = MeteredMemory(self.memory, self.metrics)
            self.model = MeteredModel(self.model, self.metrics, config.model_name)
            self.tools = MeteredTools(self.tools, self.metrics)
            self.peers = MeteredPeers(self.peers, self.metrics)
        self.budget = create_budget(config.budget, config.name, config.memory,
                                    self.metrics.budget_rejected if self.metrics is not None else None, self.memory)
        self.model = BudgetedModel(self.model, self.budget)  # checked before each model call
        self.peers = CredentialedPeers(self.peers, config.auth.outbound_token.get_secret_value())
        self.agent = Agent(config, self.memory, self.model, self.tools, self.peers, self.telemetry)
        self.ready = False
        self.waiting_for = ["startup"]
        self._startup: asyncio.Task | None = None

    def start(self) -> None:
        self._startup = asyncio.create_task(self._prepare())

    async def _prepare(self) -> None:
        """Attempt discovery once (bounded), load litellm if asked; then report ready."""
        self.waiting_for = ["tool and peer discovery"]
        await asyncio.gather(self.tools.discover(STARTUP_DISCOVERY_SECONDS),
                             self.peers.fetch_cards(STARTUP_DISCOVERY_SECONDS))
        if not (self.tools.complete and self.peers.complete):
            log.warning("startup discovery incomplete; it is retried lazily")
        if self.config.preload:
            self.waiting_for = ["model client"]
            try:
                await self.model.load()
            except Exception as error:
                log.error("%s", error)
        self.waiting_for = []
        self.ready = True
        log.info("agent %s ready", self.config.name)

    async def stop(self) -> None:
        if self._startup is not None:
            self._startup.cancel()
        await self.tools.close()
        await self.peers.close()
        await self.model.close()
        await self.http.close()
        await self.memory.close()
        await self.budget.close()
        self.telemetry.shutdown()


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"request body larger than {limit} bytes (MAX_REQUEST_BODY_BYTES)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, f"request body larger than {limit} bytes (MAX_REQUEST_BODY_BYTES)")
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(config: AgentSettings, telemetry: Telemetry | None = None) -> FastAPI:
    runtime = Runtime(config, telemetry)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        runtime.start()
        yield
        await runtime.stop()

    app = FastAPI(title=f"KAOS agent {config.name}", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.runtime = runtime
    verifier = Verifier(config.auth)
    app.add_middleware(BearerAuth, verifier=verifier)  # before any work (probes exempt)
    if runtime.metrics is not None:
        app.add_middleware(RequestMetrics, metrics=runtime.metrics)  # added last: outermost, counts 401s too

    @app.exception_handler(BadRequest)
    async def bad_request(_: Request, error: BadRequest) -> Response:
        return _json({"detail": error.detail}, error.status)

    @app.exception_handler(BudgetExceeded)
    async def budget_exceeded(_: Request, error: BudgetExceeded) -> Response:
        return _json(error.body(), 429, headers={"Retry-After": str(error.retry_after)})

    @app.exception_handler(MemoryUnavailable)
    async def memory_unavailable(_: Request, error: MemoryUnavailable) -> Response:
        # A shared memory that cannot be reached: a clear 503 the client may retry, never a 500.
        return _json({"detail": f"{error}; try again shortly"}, 503, headers={"Retry-After": "1"})

    @app.exception_handler(Exception)
    async def unexpected(_: Request, error: Exception) -> Response:
        log.exception("unexpected error")
        return _json({"detail": f"internal error: {describe(error)}"}, 500)

    route = app.router.add_route  # Starlette routes: no FastAPI dependency solving per request

    async def health(_: Request) -> Response:
        return _json({"status": "healthy", "name": config.name, "timestamp": int(time.time())})

    async def ready(_: Request) -> Response:
        if not runtime.ready:
            return _json({"status": "starting", "name": config.name, "waiting_for": runtime.waiting_for}, 503)
        return _json({
            "status": "ready",
            "name": config.name,
            "model_client_loaded": runtime.model.loaded,
            "tools_discovered": runtime.tools.complete,
            "peers_discovered": runtime.peers.complete,
        })

    async def card(request: Request) -> Response:
        await runtime.tools.refresh_if_incomplete()
        return _json(agent_card(config, public_base_url(request), runtime.tools.skills()))

    async def models(_: Request) -> Response:
        return _json({"object": "list", "data": [
            {"id": config.name, "object": "model", "created": int(time.time()), "owned_by": "kaos"}
        ]})

    async def chat(request: Request) -> Response:
        body = parse_chat_body(await _read_body(request, config.max_body_bytes))
        depth = parse_depth(request.headers.get(DEPTH_HEADER))
        given = parse_session_header(request.headers.get(SESSION_HEADER), SESSION_HEADER) or body.session_id
        session_id = given or new_session_id()
        await runtime.budget.enter(session_id, caller_of(request))  # 429 now if a budget is spent
        attributes = {"kaos.agent": config.name, "kaos.session_id": session_id, "kaos.depth": depth}
        loop_request = LoopRequest(messages=body.messages, session_id=session_id, depth=depth,
                                   continued=given is not None)

        async def run(sink=None):
            with runtime.telemetry.server_span("chat", request.headers, attributes):
                return await runtime.agent.run(loop_request, sink)

        headers = {SESSION_HEADER: session_id}
        model = body.model or config.name
        if body.stream:  # the answer's tokens go out as the model produces them
            await runtime.memory.check()  # a shared memory that is down: 503 now, not a broken stream
            return ChatStream(run, model, body.include_usage, headers)
        try:
            answer = await until_disconnected(run(), request.receive)
        except ClientGone:
            return Response(status_code=499)  # nobody is listening any more
        return _json(openai_format.completion(model, answer.content, session_id, answer.usage), headers=headers)

    async def memory_events(request: Request) -> Response:
        query = request.query_params
        limit = parse_limit(query.get("limit"))
        events, total = await runtime.memory.events(
            limit=DEFAULT_EVENTS_LIMIT if limit is None else limit,
            session_id=query.get("session_id") or None,
            event_type=query.get("event_type") or None,
        )
        return _json({"agent": config.name, "events": events, "total": total})

    async def memory_sessions(_: Request) -> Response:
        sessions = await runtime.memory.sessions()
        return _json({"agent": config.name, "sessions": sessions, "total": len(sessions)})

    async def metrics(_: Request) -> Response:
        # Nothing here reads the memory (the active sessions are counted in process), so a
        # scrape answers while Redis is down.
        return Response(runtime.metrics.exposition(), media_type=CONTENT_TYPE)

    route("/health", health, methods=["GET"])
    if runtime.metrics is not None:
        route("/metrics", metrics, methods=["GET"])
    route("/ready", ready, methods=["GET"])
    route("/.well-known/agent", card, methods=["GET"])
    route("/.well-known/agent.json", card, methods=["GET"])
    route("/v1/models", models, methods=["GET"])
    route("/v1/chat/completions", chat, methods=["POST"])
    route("/memory/events", memory_events, methods=["GET"])
    route("/memory/sessions", memory_sessions, methods=["GET"])
    a2a_server.mount(app, runtime)  # A2A JSON-RPC at /a2a, card at /.well-known/agent-card.json
    agent_mcp.mount(app, runtime)  # the agent as an MCP tool at /mcp
    openapi.mount(app, runtime, verifier.enabled)  # the contract above at /openapi.json

    return app
