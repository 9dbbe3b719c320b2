"""The agent as an A2A server, with the official ``a2a-sdk`` (issue 12).

- JSON-RPC at ``/a2a``: the A2A 1.0 methods (``SendMessage``, ``SendStreamingMessage``,
  ``GetTask``, ``CancelTask``, ...) and, on the same endpoint, the 0.3 names clients still send
  (``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``).
- The card at ``/.well-known/agent-card.json``: name, description, the JSON-RPC interface (its
  URL and protocol versions; the 0.3 fields ``url`` and ``protocolVersion`` too), skills from
  the MCP tools, ``capabilities.streaming``. The older card paths stay as they are.
- A message runs the agentic loop once: the task goes working, the answer is streamed as
  artifact updates, each piece as the model produces it, closed by the whole answer as the last
  chunk (which replaces the pieces), then completed (or failed with the error's text). A cancel
  cancels the run. An A2A context id is the KAOS session id, so a conversation continued in one
  context shares the agent's memory with the OpenAI API. A coordinator that delegates here by
  URL sends ``X-KAOS-Delegation-Depth`` as with the OpenAI API, and the depth limit holds the
  same way (no header: depth 0).
- Budgets hold as on the OpenAI API and ``/mcp``: checked before the loop runs, with the
  authenticated caller (``budget.caller_of``, passed in the call context's state), and at each
  later model call; a spent one fails the task with the budget's message (a ``budget_exceeded``
  event, the rejection metric, the request counted ``budget_exceeded``).
- The cards' URLs are the request's public base URL (public_url.py: ``X-Forwarded-*``).
- Ownership: a task belongs to the principal that sent its first message (core/principal.py; the
  SDK's task store keeps each owner's tasks apart), so ``tasks/get``, ``tasks/cancel`` and a
  resubscription to another's task answer "task not found"; a message in another's context (a
  KAOS session) fails its task with "no session ..." before anything of the session is read.
  Without authentication every caller is ``anonymous`` and shares every task.

``mount(app, runtime)`` adds the routes; the SDK is imported only then.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..budget import BudgetExceeded
from ..clients.peers import DEPTH_HEADER
from ..core.auth import acting_of, caller_of
from ..core.errors import describe
from ..core.metrics import BUDGET_EXCEEDED, set_outcome
from ..core.principal import Principal
from ..loop.agent import LoopRequest
from ..memory.ownership import no_session
from .chat_request import SESSION_ID_RULE, is_session_id, parse_depth
from .public_url import public_base_url
from .waiting_run import WaitingRun, decision_of, waiting_text

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger("kaos_runtime.a2a")

A2A_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
PROTOCOL_VERSIONS = ("1.0", "0.3")
SSE_GRACE_SECONDS = 1.0  # streams still open on shutdown: below the server's SHUTDOWN_GRACE_SECONDS
# What the executor needs of the HTTP request, put in the A2A call context's state.
CALLER, SCOPE, ACTING = "kaos.caller", "kaos.scope", "kaos.acting"
ANY_DECIDES = "Reply to this task with approve or reject (and a reason), or POST /approvals/<id>."
OTHERS_DECIDE = ("Another principal decides it with POST /approvals/<id> (with authentication on, the requester "
                 "of a call cannot decide it).")


def acting_in(state) -> Principal:
    """The principal an A2A call acts for (put in its context's state by the context builder)."""
    return state.get(ACTING) or Principal()


class _ArtifactSink:
    """Receives the answer's text from the loop as the model produces it; each piece goes out at
    once as an artifact update (appended after the first). The end of the answer is one more
    update, ``last_chunk``, that replaces the artifact with the whole answer as one text part: an
    empty final chunk would stay in the task as a part of its own, and the task (what
    ``message/send`` and ``tasks/get`` return) would hold the answer in as many parts as the
    model sent pieces."""

    def __init__(self, updater, artifact_id: str) -> None:
        self.updater = updater
        self.artifact_id = artifact_id
        self.sent = False

    async def text(self, content: str) -> None:
        if content:
            await self._add(content, append=self.sent, last=False)
            self.sent = True

    async def finish(self, content: str) -> None:
        """The end of the answer: all of it, as the artifact's one part."""
        await self._add(content, append=False, last=True)

    async def _add(self, text: str, append: bool, last: bool) -> None:
        from a2a.helpers.proto_helpers import new_text_part

        await self.updater.add_artifact([new_text_part(text)], artifact_id=self.artifact_id, name="answer",
                                        append=append, last_chunk=last)


def _executor(runtime):
    from a2a.helpers.proto_helpers import (
        get_data_parts,
        new_data_part,
        new_message,
        new_task_from_user_message,
        new_text_message,
        new_text_part,
    )
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater

    parameters = len(inspect.signature(runtime.agent.run).parameters)  # run(request[, sink[, watcher]])
    runs: dict[str, WaitingRun] = {}  # task id -> its run, while it runs

    def task_run(updater, context) -> WaitingRun:
        """A run whose task goes input-required while a call waits (the calls in its status message)."""

        async def input_required(waiting: list, note: str) -> None:
            now = time.time()
            text = waiting_text(waiting, OTHERS_DECIDE if runtime.access.enabled else ANY_DECIDES)
            text = f"{note} {text}" if note else text
            await updater.requires_input(new_message(
                [new_text_part(text), new_data_part({"approvals": [a.view(now) for a in waiting]})],
                context_id=context.context_id, task_id=context.task_id))

        return WaitingRun(input_required, updater.start_work)

    async def drive(run: WaitingRun, updater, sink: _ArtifactSink, request: LoopRequest, context,
                    headers: dict) -> None:
        """The run, to the end of the task: the answer and completed, or failed with the reason."""
        state = context.call_context.state
        try:
            with runtime.telemetry.server_span("a2a", headers, {"kaos.agent": runtime.config.name,
                                                              "kaos.session_id": context.context_id}):
                if parameters >= 3:
                    answer = await runtime.agent.run(request, sink, watcher=run)
                else:
                    answer = await (runtime.agent.run(request, sink) if parameters == 2 else runtime.agent.run(request))
        except BudgetExceeded as error:  # at a later model call: the task fails saying so
            log.warning("A2A task %s refused: %s", context.task_id, error)
            set_outcome(state.get(SCOPE), BUDGET_EXCEEDED)
            await updater.failed(new_text_message(str(error), context_id=context.context_id,
                                                  task_id=context.task_id))
            return
        except Exception as error:  # the loop's own errors end the task, with the reason
            log.warning("A2A task %s failed: %s", context.task_id, describe(error))
            await updater.failed(new_text_message(describe(error), context_id=context.context_id,
                                                  task_id=context.task_id))
            return
        await sink.finish(answer.content)
        await updater.complete()

    class KaosExecutor(AgentExecutor):
        async def execute(self, context, event_queue) -> None:
            run = runs.get(context.task_id)
            if run is not None and run.running:  # the message decides what the run waits for
                decision = decision_of(context.get_user_input(), get_data_parts(context.message.parts))
                await run.apply(runtime.approvals, decision, acting_in(context.call_context.state))
                await run.until_stop()
                return
            if context.current_task is None:
                await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            sink = _ArtifactSink(updater, f"{context.task_id}-answer")
            if not is_session_id(context.context_id):  # it is the session id: recorded, echoed
                await updater.failed(new_text_message(f"the contextId must be {SESSION_ID_RULE}",
                                                      context_id=context.context_id, task_id=context.task_id))
                return
            await updater.start_work()
            state = context.call_context.state
            acting = acting_in(state)
            try:
                headers = state.get("headers") or {}
                depth = parse_depth(headers.get(DEPTH_HEADER.lower()))  # a KAOS coordinator's, else 0
                if not await runtime.sessions.enter(context.context_id, acting):  # another's context
                    await updater.failed(new_text_message(no_session(context.context_id),
                                                          context_id=context.context_id, task_id=context.task_id))
                    return
                # As chat completions and /mcp: refused now if a budget is spent, counted per caller.
                await runtime.budget.enter(context.context_id, state.get(CALLER))
            except BudgetExceeded as error:
                log.warning("A2A task %s refused: %s", context.task_id, error)
                set_outcome(state.get(SCOPE), BUDGET_EXCEEDED)
                await updater.failed(new_text_message(str(error), context_id=context.context_id,
                                                      task_id=context.task_id))
                return
            except Exception as error:
                await updater.failed(new_text_message(describe(error), context_id=context.context_id,
                                                      task_id=context.task_id))
                return
            request = LoopRequest(messages=[{"role": "user", "content": context.get_user_input()}],
                                  session_id=context.context_id, depth=depth, continued=True,
                                  caller=acting.text, caller_groups=acting.groups)
            run = runs[context.task_id] = task_run(updater, context)
            run.start(drive(run, updater, sink, request, context, headers))
            run.task.add_done_callback(lambda _: runs.pop(context.task_id, None))
            await run.until_stop()

        async def cancel(self, context, event_queue) -> None:
            run = runs.get(context.task_id)
            if run is not None and run.running:
                run.task.cancel()
                await asyncio.gather(run.task, return_exceptions=True)
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

    return KaosExecutor()


def agent_card(runtime, base_url: str):
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    config = runtime.config
    url = base_url.rstrip("/") + A2A_PATH
    return AgentCard(
        name=config.name,
        description=config.description or f"KAOS agent {config.name}",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
                              for version in PROTOCOL_VERSIONS],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=tool["name"], name=tool["name"], description=tool.get("description") or tool["name"],
                           tags=["mcp-tool"]) for tool in runtime.tools.skills()]
        or [AgentSkill(id="chat", name="chat", description=config.description or "Answer a message", tags=["chat"])],
    )


def _context_builder():
    from a2a.server.routes import DefaultServerCallContextBuilder

    class KaosContextBuilder(DefaultServerCallContextBuilder):
        """The SDK's call context, plus the caller a per-caller budget counts against (the
        authenticated principal, see budget.caller_of), the principal the call acts for (who owns
        its tasks, core/auth.acting_of) and the request's ASGI scope (where a refusal sets the
        request's metric outcome)."""

        def build(self, request):
            context = super().build(request)
            context.state[CALLER] = caller_of(request)
            context.state[ACTING] = acting_of(request)
            context.state[SCOPE] = request.scope
            return context

    return KaosContextBuilder()


def mount(app: "FastAPI", runtime) -> None:
    """Add the A2A JSON-RPC endpoint and the A2A card to the agent's app."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore

    # Each task is its owner's: another principal's task id is not found (Access.owner: one owner
    # for everyone without authentication).
    tasks = InMemoryTaskStore(owner_resolver=lambda context: runtime.access.owner(acting_in(context.state)))
    handler = DefaultRequestHandler(agent_executor=_executor(runtime), task_store=tasks,
                                    agent_card=agent_card(runtime, "http://localhost"))
    for route in create_jsonrpc_routes(handler, A2A_PATH, context_builder=_context_builder(),
                                       enable_v0_3_compat=True, shutdown_grace_period=SSE_GRACE_SECONDS):
        app.router.routes.append(route)

    async def card(request: Request) -> JSONResponse:
        await runtime.tools.refresh_if_incomplete()
        return JSONResponse(agent_card_to_dict(agent_card(runtime, public_base_url(request))))

    app.router.add_route(CARD_PATH, card, methods=["GET"])
