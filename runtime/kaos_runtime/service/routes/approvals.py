"""``GET /approvals`` and ``POST /approvals/{id}``: the calls waiting for a person, and their
decisions; with the calls waiting in the KAOS peers this agent delegates to (clients/peer_approvals.py),
asked on behalf of the caller. Who sees and decides what: ``ApprovalGate.visible`` and ``decide``
(a refusal is a 403 that says why)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...approvals import AlreadySettled, NotAllowed, UnknownApproval
from ...clients.peer_approvals import HOPS_HEADER, PeerApprovals
from ...core.auth import acting_of
from ...protocols.approval_request import parse_decision, parse_hops, parse_status
from ..responses import json_response
from ..runtime import Runtime
from .chat import read_body


def router(runtime: Runtime) -> APIRouter:
    gate = runtime.approvals
    config = runtime.config
    peers = PeerApprovals(config.peers, runtime.http, config.name, config.auth.outbound_token.get_secret_value())
    routes = APIRouter()

    def nested(request: Request) -> int | None:
        """The hops this request is from the person's agent; None: too deep to ask the peers."""
        hops = parse_hops(request.headers.get(HOPS_HEADER))
        return hops if peers.peers and hops < config.max_delegation_depth else None

    async def listing(request: Request) -> Response:
        status = parse_status(request.query_params.get("status"))
        session_id = request.query_params.get("session_id") or None
        who = acting_of(request)
        try:
            visible = await gate.visible(who)
        except NotAllowed as refused:
            return json_response({"detail": str(refused)}, 403)
        now = time.time()
        views = [approval.view(now) for approval in visible]
        hops = nested(request)
        if hops is not None:
            views += await peers.listing(status, hops, who)
        views = [view for view in views if (session_id is None or view.get("session_id") == session_id)
                 and (status == "all" or view.get("status") == status)]
        return json_response({"agent": config.name, "approvals": views, "total": len(views)})

    async def decide(request: Request) -> Response:
        approval_id = request.path_params["approval_id"]
        body = await read_body(request, config.max_body_bytes)
        decision = parse_decision(body)
        who = acting_of(request)
        try:
            approval = await gate.decide(approval_id, decision.decision, who, decision.reason)
        except NotAllowed as refused:
            return json_response({"detail": str(refused)}, 403)
        except UnknownApproval:
            hops = nested(request)
            answered = await peers.decide(approval_id, body, who, hops) if hops is not None else None
            if answered is not None:
                return json_response(answered[1], answered[0])
            return json_response({"detail": f"no approval {approval_id!r} on agent {config.name} "
                                            "or the peers it delegates to"}, 404)
        except AlreadySettled as settled:
            return json_response({"detail": f"approval {approval_id} is already {settled.status}",
                                  "approval": settled.approval.view(time.time())}, 409)
        return json_response(approval.view(time.time()))

    routes.add_route("/approvals", listing, methods=["GET"])
    routes.add_route("/approvals/{approval_id}", decide, methods=["POST"])
    return routes
