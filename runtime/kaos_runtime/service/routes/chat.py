"""``POST /v1/chat/completions``: one run of the agentic loop, answered whole or streamed.

The handler takes the raw request and returns a ready-made response: validation is done by
``protocols.chat_request`` (clear 4xx errors), and skipping pydantic models keeps the
per-request cost low (see docs/runtime.md, "Performance").
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...clients.peers import DEPTH_HEADER
from ...core.auth import acting_of, caller_of
from ...loop.agent import LoopRequest
from ...memory import new_session_id
from ...memory.ownership import no_session
from ...protocols import openai_format
from ...protocols.chat_plain import PlainChat
from ...protocols.chat_request import (
    MAX_STEPS_HEADER,
    MAX_TOKENS_HEADER,
    SESSION_HEADER,
    STOPPED_HEADER,
    BadRequest,
    parse_bound,
    parse_chat_body,
    parse_depth,
    parse_session_header,
)
from ...protocols.chat_stream import ChatStream
from ..responses import json_response
from ..runtime import Runtime


async def read_body(request: Request, limit: int) -> bytes:
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


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()
    # The answer's model is the agent, as /v1/models lists it, whatever the request named: a
    # request's model id is never echoed (OpenAI clients take any; a 400 would refuse them all).
    model = config.name

    async def chat(request: Request) -> Response:
        body = parse_chat_body(await read_body(request, config.max_body_bytes))
        depth = parse_depth(request.headers.get(DEPTH_HEADER))
        given = parse_session_header(request.headers.get(SESSION_HEADER), SESSION_HEADER) or body.session_id
        session_id = given or new_session_id()
        acting = acting_of(request)
        if not await runtime.sessions.enter(session_id, acting):  # another's: as if there were none
            return json_response({"detail": no_session(session_id)}, 404)
        callers = caller_of(request)
        await runtime.budget.enter(session_id, callers)  # 429 now if a budget is spent
        attributes = {"kaos.agent": config.name, "kaos.session_id": session_id, "kaos.depth": depth}
        loop_request = LoopRequest(messages=body.messages, session_id=session_id, depth=depth,
                                   continued=given is not None, caller=acting.text, caller_groups=acting.groups,
                                   max_steps=parse_bound(request.headers.get(MAX_STEPS_HEADER), MAX_STEPS_HEADER),
                                   max_tokens=parse_bound(request.headers.get(MAX_TOKENS_HEADER), MAX_TOKENS_HEADER))

        async def run(sink=None, watcher=None):
            with runtime.telemetry.server_span("chat", request.headers, attributes):
                return await runtime.agent.run(loop_request, sink, watcher=watcher or sink)

        headers = {SESSION_HEADER: session_id}
        if body.stream:  # the answer's tokens go out as the model produces them
            await runtime.memory.check()  # a shared memory that is down: 503 now, not a broken stream
            return ChatStream(run, model, body.include_usage, headers)

        def completion(answer) -> dict:
            return openai_format.completion(model, answer.content, session_id, answer.usage)

        def respond(answer) -> Response:
            stopped = {STOPPED_HEADER: answer.stopped} if answer.stopped else {}
            return json_response(completion(answer), headers={**headers, **stopped})

        return PlainChat(lambda watcher: run(watcher=watcher), respond, completion, headers)

    routes.add_route("/v1/chat/completions", chat, methods=["POST"])
    return routes
