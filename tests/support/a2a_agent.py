"""A small plain A2A agent built only from a2a-sdk's server classes (no KAOS code): the
stand-in for an agent KAOS did not deploy.

Run it as a process: ``python -m tests.support.a2a_agent`` (HOST/PORT env). Its card is at
``/.well-known/agent-card.json``, its JSON-RPC endpoint at ``/``. Env:

- ``A2A_AGENT_NAME``: the card's name (empty: the card has no name);
- ``A2A_PROTOCOL``: ``1.0`` (default; the 1.0 methods, ``SendMessage``) or ``0.3`` (a 0.3 card
  with ``url`` and ``protocolVersion``, and the 0.3 methods, ``message/send``).

What it answers depends on the text it gets:

- ``... please fail ...``: the task fails, with ``cannot do: <text>`` as status message;
- ``... rpc error ...``: the executor raises InvalidParamsError, a JSON-RPC error;
- ``... as message ...``: a Message, not a Task;
- anything else: a completed task whose artifact is ``A2A done: <TEXT IN CAPITALS>``.

``GET /_received`` lists what it got: ``received``, ``{"text", "depth", "authorization",
"context_id"}`` per message (the ``X-KAOS-Delegation-Depth`` and ``Authorization`` headers as
received), and ``methods``, the JSON-RPC method of each POST.
"""

from __future__ import annotations

import json
import os

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Role
from a2a.utils.errors import InvalidParamsError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

RECEIVED: list[dict] = []
METHODS: list[str] = []


class MethodLog:
    """ASGI middleware: notes the JSON-RPC method of each POST, then passes the body on."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages = [await receive()]
        while messages[-1].get("more_body"):
            messages.append(await receive())
        try:
            METHODS.append(json.loads(b"".join(m.get("body", b"") for m in messages)).get("method"))
        except (ValueError, AttributeError):
            METHODS.append(None)

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


class PlainExecutor(AgentExecutor):
    async def execute(self, context, event_queue) -> None:
        text = context.get_user_input()
        headers = context.call_context.state.get("headers", {})
        RECEIVED.append({"text": text, "depth": headers.get("x-kaos-delegation-depth"),
                         "authorization": headers.get("authorization"), "context_id": context.context_id})
        if "rpc error" in text:
            raise InvalidParamsError(f"refusing: {text}")
        if "as message" in text:
            await event_queue.enqueue_event(new_text_message(f"A2A message: {text}", context_id=context.context_id,
                                                             role=Role.ROLE_AGENT))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if "please fail" in text:
            await updater.failed(new_text_message(f"cannot do: {text}", context_id=context.context_id,
                                                  task_id=context.task_id, role=Role.ROLE_AGENT))
            return
        await updater.add_artifact([new_text_part(f"A2A done: {text.upper()}")], name="answer")
        await updater.complete()

    async def cancel(self, context, event_queue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(name: str, url: str, protocol: str) -> AgentCard:
    return AgentCard(
        name=name,
        description="A plain A2A agent (a2a-sdk) that answers in capitals",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=protocol)],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="capitals", name="capitals", description="Answers in capitals", tags=["text"])],
    )


def create_app(name: str, url: str, protocol: str) -> Starlette:
    agent_card = card(name, url, protocol)
    handler = DefaultRequestHandler(agent_executor=PlainExecutor(), task_store=InMemoryTaskStore(),
                                    agent_card=agent_card)

    async def received(_: Request) -> JSONResponse:
        return JSONResponse({"received": RECEIVED, "methods": METHODS})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [Route("/_received", received, methods=["GET"]), Route("/health", health, methods=["GET"]),
              *create_agent_card_routes(agent_card),
              *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=protocol.startswith("0."))]
    return Starlette(routes=routes, middleware=[Middleware(MethodLog)])


def main() -> None:
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "9200"))
    protocol = os.environ.get("A2A_PROTOCOL", "1.0")
    app = create_app(os.environ.get("A2A_AGENT_NAME", "plain-a2a"), f"http://{host}:{port}/", protocol)
    uvicorn.run(app, host=host, port=port, log_level="warning")


if __name__ == "__main__":
    main()
