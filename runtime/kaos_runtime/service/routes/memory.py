"""``GET /memory/events`` and ``GET /memory/sessions``: what the agent's memory holds, of the
sessions the caller may read (memory/ownership.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.auth import acting_of
from ...memory.ownership import no_session
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
        session_id = query.get("session_id") or None
        who = acting_of(request)
        if session_id is not None and not await runtime.sessions.readable(session_id, who):
            return json_response({"detail": no_session(session_id)}, 404)
        found, total = await runtime.memory.events(
            limit=DEFAULT_EVENTS_LIMIT if limit is None else limit,
            session_id=session_id,
            event_type=query.get("event_type") or None,
            owner=None if session_id is not None else runtime.sessions.owner_filter(who),
        )
        return json_response({"agent": config.name, "events": found, "total": total})

    async def sessions(request: Request) -> Response:
        listed = await runtime.memory.sessions(runtime.sessions.owner_filter(acting_of(request)))
        return json_response({"agent": config.name, "sessions": listed, "total": len(listed)})

    routes.add_route("/memory/events", events, methods=["GET"])
    routes.add_route("/memory/sessions", sessions, methods=["GET"])
    return routes
