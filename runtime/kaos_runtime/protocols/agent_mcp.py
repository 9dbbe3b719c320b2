"""The agent as an MCP server (issue 12): streamable HTTP at ``/mcp`` with one tool.

The tool, ``ask_<AGENT_NAME>``, sends the agent a message and returns its answer: the text of
the result is the answer (what a model calling the tool reads) and its structured content is
``{"answer", "session_id"}``; passing that ``session_id`` back continues the conversation as
``session_id`` does on chat completions. So an MCPServer of kind external (``spec.url``) can
point at an agent's ``/mcp`` and other agents use it as a tool.

The server is the official ``mcp`` SDK, stateless with JSON responses (like ``kaos-runtime
mcp``), behind the agent's bearer authentication. The SDK costs about 0.4 s to import, so
nothing of it is loaded at startup: the first request to ``/mcp`` imports it in a worker
thread (the event loop keeps serving) and builds the server; a plain GET answers at once
without it (``mcp_http.NoGetStream``).

``mount(app, runtime)`` adds the route and stops the server with the app.
"""

import asyncio
import contextvars
import importlib
import logging
import re
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field
from starlette.routing import Route

from ..clients.peers import DEPTH_HEADER
from ..core.budget import BudgetExceeded, caller_of
from ..core.errors import describe
from ..core.metrics import BUDGET_EXCEEDED, set_outcome
from ..loop.agent import LoopRequest
from ..memory import new_session_id
from .chat_request import SESSION_ID_PATTERN, BadRequest, parse_depth
from .mcp_http import NoGetStream

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("kaos_runtime.agent_mcp")

MCP_PATH = "/mcp"
TOOL_NAME_MAX = 64  # what OpenAI function names allow, so that a model can be offered the tool


def tool_name(agent: str) -> str:
    """``ask_<agent>`` with what tool names do not allow replaced by ``_``: each agent's tool
    has its own name, so one agent may use several agents as tools."""
    return ("ask_" + re.sub(r"[^A-Za-z0-9_-]", "_", agent))[:TOOL_NAME_MAX]


class Reply(BaseModel):
    """The tool's structured result."""

    answer: str = Field(description="The agent's answer.")
    session_id: str = Field(description="The session of this exchange: pass it back to continue it.")


Message = Annotated[str, Field(description="The message for the agent.")]
SessionId = Annotated[str | None, Field(
    default=None, pattern=SESSION_ID_PATTERN,
    description="Continue this session (the session_id of an earlier answer); omitted: a new session.")]


def _server(runtime):
    """The MCP server with the agent's one tool (the SDK is imported by now)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import CallToolResult, TextContent

    config = runtime.config
    server = MCPServer(config.name, instructions=config.description or None)

    async def ask(message: Message, session_id: SessionId = None,
                  ctx: Context = None) -> Annotated[CallToolResult, Reply]:
        request = ctx.request_context.request if ctx is not None else None
        headers = dict(request.headers) if request is not None else {}
        try:
            depth = parse_depth(headers.get(DEPTH_HEADER.lower()))
        except BadRequest as error:
            raise ToolError(error.detail) from None
        session = session_id or new_session_id()
        attributes = {"kaos.agent": config.name, "kaos.session_id": session, "kaos.depth": depth}
        loop_request = LoopRequest(messages=[{"role": "user", "content": message}], session_id=session,
                                   depth=depth, continued=session_id is not None)
        try:
            await runtime.budget.enter(session, caller_of(request) if request is not None else None)
            with runtime.telemetry.server_span("mcp", headers, attributes):
                answer = await runtime.agent.run(loop_request)
        except Exception as error:  # a spent budget, memory down, ...: an MCP error result with the reason
            log.warning("MCP call of %s failed: %s", config.name, describe(error))
            if isinstance(error, BudgetExceeded) and request is not None:
                set_outcome(request.scope, BUDGET_EXCEEDED)  # the HTTP answer is a 200 all the same
            raise ToolError(describe(error)) from None
        return CallToolResult(content=[TextContent(type="text", text=answer.content)],
                              structured_content={"answer": answer.content, "session_id": session})

    description = (f"Send a message to the agent {config.name}"
                   + (f" ({config.description})" if config.description else "")
                   + " and get its answer. The result's session_id continues the conversation when passed back.")
    server.add_tool(ask, name=tool_name(config.name), description=description)
    server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        max_request_body_size=config.max_body_bytes,
        # Callers reach the agent by its Service name or through the gateway, not only as localhost.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server


class LazyMcp:
    """ASGI app of ``/mcp``: builds the server on its first request, then holds its session
    manager (the task group its requests run in) until ``close``."""

    def __init__(self, runtime) -> None:
        self.runtime = runtime
        self._handle = None
        self._lock = asyncio.Lock()
        self._stop = asyncio.Event()
        self._holder: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        handle = self._handle or await self._start()
        await handle(scope, receive, send)

    async def _start(self):
        async with self._lock:
            if self._handle is None:
                await asyncio.to_thread(importlib.import_module, "mcp.server.mcpserver")
                manager = _server(self.runtime).session_manager
                started = asyncio.get_running_loop().create_future()
                # A fresh context: the server's tasks inherit nothing of the request that started it.
                self._holder = asyncio.create_task(self._hold(manager, started), context=contextvars.Context())
                await started
                self._handle = manager.handle_request
                log.info("MCP server of %s started at %s", self.runtime.config.name, MCP_PATH)
        return self._handle

    async def _hold(self, manager, started: asyncio.Future) -> None:
        try:
            async with manager.run():
                started.set_result(None)
                await self._stop.wait()
        except BaseException as error:
            if not started.done():
                started.set_exception(error)
            raise

    async def close(self) -> None:
        if self._holder is not None:
            self._stop.set()
            await asyncio.gather(self._holder, return_exceptions=True)


def mount(app: "FastAPI", runtime) -> None:
    """Serve the agent's MCP tool at ``/mcp``; its server stops when the app does."""
    endpoint = LazyMcp(runtime)
    app.router.routes.append(Route(MCP_PATH, NoGetStream(endpoint, MCP_PATH)))
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(target):
        async with inner(target) as state:
            try:
                yield state
            finally:
                await endpoint.close()

    app.router.lifespan_context = lifespan
