"""The agent's FastAPI service: the HTTP contract of docs/runtime.md.

``create_app`` composes it: the Runtime (what the process holds), the request guard (cross-site,
JSON only, header and body bounds), bearer authentication and request metrics middleware, the
error handlers, one router per route group (``routes/``), and the protocols mounted beside them
(A2A at ``/a2a``, the agent's MCP tool at ``/mcp``), then the OpenAPI document of all of it.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import Response

from ..approvals import ApprovalInterrupted
from ..budget import BudgetExceeded
from ..core.auth import BearerAuth, Verifier
from ..core.errors import describe
from ..core.metrics import RequestMetrics
from ..core.request_guard import RequestGuard
from ..core.settings import AgentSettings
from ..core.telemetry import Telemetry
from ..memory import MemoryUnavailable
from ..protocols import a2a_server, agent_mcp, request_headers
from ..protocols.chat_request import BadRequest
from ..protocols.openai_format import interrupted, unavailable
from .access_check import AccessCheck
from .responses import json_response
from .routes import access, approvals, audit, chat, discovery, health, long_term, memory, metrics, openapi
from .runtime import Runtime

log = logging.getLogger("kaos_runtime.agent")


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
    # spec.access, after authentication (the middleware added first runs innermost).
    app.add_middleware(AccessCheck, access=runtime.access, audit=runtime.audit, agent=config.name)
    app.add_middleware(BearerAuth, verifier=verifier, agent=config.name)  # before any work (probes exempt)
    # Outside the authentication: cross-site, not JSON, bad KAOS headers, too large a body.
    app.add_middleware(RequestGuard, max_body_bytes=config.max_body_bytes, header_rules=request_headers.RULES,
                       router=app.router)
    if runtime.metrics is not None:
        app.add_middleware(RequestMetrics, metrics=runtime.metrics)  # added last: outermost, counts 401s too

    @app.exception_handler(BadRequest)
    async def bad_request(_: Request, error: BadRequest) -> Response:
        return json_response({"detail": error.detail}, error.status)

    @app.exception_handler(BudgetExceeded)
    async def budget_exceeded(_: Request, error: BudgetExceeded) -> Response:
        return json_response(error.body(), 429, headers={"Retry-After": str(error.retry_after)})

    @app.exception_handler(MemoryUnavailable)
    async def memory_unavailable(_: Request, error: MemoryUnavailable) -> Response:
        # A shared memory that cannot be reached: a clear 503 the client may retry, never a 500.
        return json_response(unavailable(error), 503, headers={"Retry-After": "1"})

    @app.exception_handler(ApprovalInterrupted)
    async def approval_interrupted(_: Request, error: ApprovalInterrupted) -> Response:
        # The process stops while the request's call waits for a decision: say what becomes of it.
        return json_response(interrupted(error), 503)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, error: Exception) -> Response:
        log.exception("unexpected error")
        return json_response({"detail": f"internal error: {describe(error)}"}, 500)

    groups = [health, discovery, chat, memory, approvals, audit, access] + ([metrics] if runtime.metrics is not None else []) \
        + ([long_term] if runtime.long_term is not None else [])
    for group in groups:  # their plain routes, flat in the app's router (include_router would nest them)
        app.router.routes.extend(group.router(runtime).routes)
    a2a_server.mount(app, runtime)  # A2A JSON-RPC at /a2a, card at /.well-known/agent-card.json
    agent_mcp.mount(app, runtime)  # the agent as an MCP tool at /mcp
    openapi.mount(app, runtime, verifier.enabled)  # the contract above at /openapi.json
    return app
