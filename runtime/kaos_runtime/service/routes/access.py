"""``GET /access/me``: what the caller may do on this agent, by the agent's own rules
(core/grants.py ``held``, on principal.Access), so a client such as the console can show a
person only the agents that would let them chat. It needs a token like every other route; an
agent without authentication answers ``anonymous`` holding every verb."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.auth import acting_of
from ...core.grants import held
from ..responses import json_response
from ..runtime import Runtime

ACCESS_PATH = "/access/me"


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()

    async def my_access(request: Request) -> Response:
        who = acting_of(request)
        return json_response({"agent": config.name, "principal": who.text, "groups": sorted(who.groups),
                              "authentication": config.auth.enabled, "verbs": list(held(runtime.access, who))})

    routes.add_route(ACCESS_PATH, my_access, methods=["GET"])
    return routes
