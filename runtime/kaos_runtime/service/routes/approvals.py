"""``GET /approvals`` and ``POST /approvals/{id}``: the calls waiting for a person, and their decisions."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...approvals import AlreadySettled, UnknownApproval
from ...core.budget import caller_of
from ...protocols.approval_request import parse_decision, parse_status
from ..responses import json_response
from ..runtime import Runtime
from .chat import read_body


def router(runtime: Runtime) -> APIRouter:
    gate = runtime.approvals
    routes = APIRouter()

    async def listing(request: Request) -> Response:
        status = parse_status(request.query_params.get("status"))
        session_id = request.query_params.get("session_id") or None
        now = time.time()
        views = [approval.view(now) for approval in await gate.store.all()
                 if session_id is None or approval.session_id == session_id]
        if status != "all":
            views = [view for view in views if view["status"] == status]
        return json_response({"agent": runtime.config.name, "approvals": views, "total": len(views)})

    async def decide(request: Request) -> Response:
        approval_id = request.path_params["approval_id"]
        decision = parse_decision(await read_body(request, runtime.config.max_body_bytes))
        try:
            approval = await gate.decide(approval_id, decision.decision, caller_of(request), decision.reason)
        except UnknownApproval:
            return json_response({"detail": f"no approval {approval_id!r} on agent {runtime.config.name}"}, 404)
        except AlreadySettled as settled:
            return json_response({"detail": f"approval {approval_id} is already {settled.status}",
                                  "approval": settled.approval.view(time.time())}, 409)
        return json_response(approval.view(time.time()))

    routes.add_route("/approvals", listing, methods=["GET"])
    routes.add_route("/approvals/{approval_id}", decide, methods=["POST"])
    return routes
