"""``GET /memory/events`` and ``GET /memory/sessions``: what the agent's memory holds."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...protocols.chat_request import parse_limit
from ..responses import json_response
from ..runtime import Runtime

DEFAULT_EVENTS_LIMIT = 100


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()

    async def events(request: Request) -> Response:
        query = request.query_params
        limit = parse_limit(query.get("limit"))
        found, total = await runtime.memory.events(
            limit=DEFAULT_EVENTS_LIMIT if limit is None else limit,
            session_id=query.get("session_id") or None,
            event_type=query.get("event_type") or None,
        )
        return json_response({"agent": config.name, "events": found, "total": total})

    async def sessions(_: Request) -> Response:
        listed = await runtime.memory.sessions()
        return json_response({"agent": config.name, "sessions": listed, "total": len(listed)})

    routes.add_route("/memory/events", events, methods=["GET"])
    routes.add_route("/memory/sessions", sessions, methods=["GET"])
    return routes
