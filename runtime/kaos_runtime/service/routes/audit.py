"""``GET /audit``: the agent's audit trail (core/audit.py), newest last; admins only."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.auth import acting_of
from ...protocols.chat_request import parse_limit
from ..responses import json_response
from ..runtime import Runtime


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()

    async def audit(request: Request) -> Response:
        limit = parse_limit(request.query_params.get("limit"))
        who = acting_of(request)
        if config.auth.enabled and not runtime.access.is_admin(who):
            return json_response({"detail": f"{who.text} may not read the audit trail of agent {config.name}: "
                                            "it needs 'admin' (spec.auth.admins, or a spec.access rule "
                                            "granting admin)"}, 403)
        events = runtime.audit.events(limit)
        return json_response({"agent": config.name, "events": events, "total": len(events)})

    routes.add_route("/audit", audit, methods=["GET"])
    return routes
