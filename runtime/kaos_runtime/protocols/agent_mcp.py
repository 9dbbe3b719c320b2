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

A call whose run waits for an approval (``TOOL_APPROVAL_*``) asks a client that answers form
elicitations in MCP's stateless multi-round-trip flow (protocol 2026-07-28): the tool answers
``InputRequiredResult`` with one elicitation per waiting call (approve or reject, a reason) and
the run goes on beside the request (``waiting_run.WaitingRun``); the client's retry brings the
decisions and gets the answer, or the next question. Any other client's call waits, as a chat
completion does, until the decision (``POST /approvals/{id}``) or the timeout; so does every call
with authentication on, where the caller (the requester) may not decide its own call.

A session belongs to the principal that started it (core/principal.py): a ``session_id`` of
another's is an error result, "no session ...", and a run's retry is the principal's who started it.

``mount(app, runtime)`` adds the route and stops the server with the app.
"""

import asyncio
import contextvars
import importlib
import json
import logging
import re
import uuid
from collections import OrderedDict
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, Field
from starlette.routing import Route

from ..budget import BudgetExceeded
from ..clients.peers import DEPTH_HEADER
from ..core.auth import acting_of, caller_of
from ..core.errors import describe
from ..core.metrics import BUDGET_EXCEEDED, set_outcome
from ..core.principal import Principal
from ..loop.agent import LoopRequest
from ..memory import new_session_id
from ..memory.ownership import no_session
from .chat_request import SESSION_ID_PATTERN, BadRequest, parse_depth
from .mcp_http import NoGetStream
from .waiting_run import TaskDecision, WaitingRun, waiting_text

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


MRTR_VERSION = "2026-07-28"  # the MCP version whose tool calls can ask the client and be retried
DECISION_SCHEMA = {"type": "object", "required": ["decision"], "properties": {
    "decision": {"type": "string", "enum": ["approve", "reject"], "title": "Decision"},
    "reason": {"type": "string", "title": "Reason"}}}


class McpRuns:
    """The runs of MCP calls that wait for a decision, by a key the client echoes in requestState
    (sealed by the SDK), with the principal whose call it is; kept until the retry that gets the
    answer, at most ``MAX_RUNS``."""

    MAX_RUNS = 1000

    def __init__(self) -> None:
        self._runs: OrderedDict[str, tuple[WaitingRun, str]] = OrderedDict()

    def add(self, run: WaitingRun, owner: str) -> str:
        key = uuid.uuid4().hex
        self._runs[key] = (run, owner)
        while len(self._runs) > self.MAX_RUNS:
            self._runs.popitem(last=False)
        return key

    def get(self, key: str, owner: str) -> WaitingRun | None:
        """The run, for the principal whose call it is only."""
        run, started_by = self._runs.get(key, (None, ""))
        return run if started_by == owner else None

    def discard(self, key: str) -> None:
        self._runs.pop(key, None)


def approval_question(approval):
    """The form elicitation that asks about a waiting call."""
    from mcp.types import ElicitRequest, ElicitRequestFormParams

    return ElicitRequest(params=ElicitRequestFormParams(
        message=waiting_text([approval], "Approve or reject it (with a reason)."), requested_schema=DECISION_SCHEMA))


def decision_of_elicitation(approval_id: str, response) -> TaskDecision:
    """The client's answer: its form (accept), else a rejection saying it declined or cancelled."""
    action = getattr(response, "action", None)
    content = getattr(response, "content", None) or {}
    if action == "accept" and content.get("decision") in ("approve", "reject"):
        reason = content.get("reason")
        return TaskDecision(content["decision"], reason if isinstance(reason, str) else "", approval_id)
    return TaskDecision("reject", f"the MCP client answered {action or 'nothing'}", approval_id)


def _server(runtime):
    """The MCP server with the agent's one tool (the SDK is imported by now)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import CallToolResult, InputRequiredResult, TextContent
    from mcp_types.version import is_version_at_least

    config = runtime.config
    server = MCPServer(config.name, instructions=config.description or None)
    runs = McpRuns()

    async def ask(message: Message, session_id: SessionId = None,
                  ctx: Context = None) -> Annotated[CallToolResult, Reply] | InputRequiredResult:
        request = ctx.request_context.request if ctx is not None else None
        if ctx is not None and ctx.request_state:  # a retry with the decisions on what waits
            return await retry(ctx, request)
        headers = dict(request.headers) if request is not None else {}
        try:
            depth = parse_depth(headers.get(DEPTH_HEADER.lower()))
        except BadRequest as error:
            raise ToolError(error.detail) from None
        session = session_id or new_session_id()
        acting = acting_of(request) if request is not None else Principal()
        attributes = {"kaos.agent": config.name, "kaos.session_id": session, "kaos.depth": depth}
        callers = caller_of(request) if request is not None else None
        loop_request = LoopRequest(messages=[{"role": "user", "content": message}], session_id=session,
                                   depth=depth, continued=session_id is not None, caller=acting.text, caller_groups=acting.groups)
        try:
            owned = await runtime.sessions.enter(session, acting)  # another's: as if there were none
            if owned:
                await runtime.budget.enter(session, callers)
        except Exception as error:
            failed(error, request)
        if not owned:
            raise ToolError(no_session(session))
        if asks_for_approvals(ctx):  # the run goes on beside the request; a waiting call is asked about
            run = WaitingRun()
            run.start(drive(run, loop_request, headers, attributes))
            key = runs.add(run, acting.text)
            return await outcome(key, run, session, request)
        try:
            with runtime.telemetry.server_span("mcp", headers, attributes):
                answer = await runtime.agent.run(loop_request)
        except Exception as error:  # a spent budget, memory down, ...: an MCP error result with the reason
            failed(error, request)
        return reply(answer.content, session)

    def failed(error: Exception, request) -> None:
        log.warning("MCP call of %s failed: %s", config.name, describe(error))
        if isinstance(error, BudgetExceeded) and request is not None:
            set_outcome(request.scope, BUDGET_EXCEEDED)  # the HTTP answer is a 200 all the same
        raise ToolError(describe(error)) from None

    def reply(content: str, session: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=content)],
                              structured_content={"answer": content, "session_id": session})

    def asks_for_approvals(ctx) -> bool:
        """A client that answers form elicitations in the stateless multi-round-trip flow (2026-07-28),
        on an agent without authentication (with it, the caller may not decide its own call)."""
        if ctx is None or not runtime.approvals.policy.enabled or not ctx.protocol_version or runtime.access.enabled:
            return False
        capabilities = ctx.client_capabilities
        return (is_version_at_least(ctx.protocol_version, MRTR_VERSION) and capabilities is not None
                and capabilities.elicitation is not None)

    async def drive(run: WaitingRun, loop_request: LoopRequest, headers: dict, attributes: dict):
        with runtime.telemetry.server_span("mcp", headers, attributes):
            return await runtime.agent.run(loop_request, None, watcher=run)

    async def outcome(key: str, run: WaitingRun, session: str, request):
        """The answer once the run ends, or the question on what waits (the retry comes back with it)."""
        await run.until_stop()
        if run.waiting:
            return InputRequiredResult(
                input_requests={approval.id: approval_question(approval) for approval in run.waiting.values()},
                request_state=json.dumps({"run": key, "session": session}))
        runs.discard(key)
        try:
            answer = run.task.result()
        except Exception as error:
            failed(error, request)
        return reply(answer.content, session)

    async def retry(ctx, request):
        state = json.loads(ctx.request_state)
        by = acting_of(request) if request is not None else Principal()
        run = runs.get(state.get("run", ""), by.text)
        if run is None:
            raise ToolError("this call's run is no longer here (the agent restarted, or it ended)")
        for approval_id, response in (ctx.input_responses or {}).items():
            await run.apply(runtime.approvals, decision_of_elicitation(approval_id, response), by)
        return await outcome(state["run"], run, state.get("session", ""), request)

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
