"""``GET /approvals`` and ``POST /approvals/{id}``: the calls waiting for a person, and their
decisions; with the calls waiting in the KAOS peers this agent delegates to (clients/peer_approvals.py)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...approvals import AlreadySettled, UnknownApproval
from ...clients.peer_approvals import DECIDED_BY_HEADER, HOPS_HEADER, PeerApprovals
from ...core.budget import caller_of
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

    def decider(request: Request) -> str:
        """The caller; for a decision a coordinator passes on, the person it came from too."""
        caller, relayed = caller_of(request)[0], request.headers.get(DECIDED_BY_HEADER, "").strip()
        return f"{relayed[:200]} via {caller}" if relayed else caller

    async def listing(request: Request) -> Response:
        status = parse_status(request.query_params.get("status"))
        session_id = request.query_params.get("session_id") or None
        now = time.time()
        views = [approval.view(now) for approval in await gate.store.all()]
        hops = nested(request)
        if hops is not None:
            views += await peers.listing(status, hops)
        views = [view for view in views if (session_id is None or view.get("session_id") == session_id)
                 and (status == "all" or view.get("status") == status)]
        return json_response({"agent": config.name, "approvals": views, "total": len(views)})

    async def decide(request: Request) -> Response:
        approval_id = request.path_params["approval_id"]
        body = await read_body(request, config.max_body_bytes)
        decision = parse_decision(body)
        try:
            approval = await gate.decide(approval_id, decision.decision, decider(request), decision.reason)
        except UnknownApproval:
            hops = nested(request)
            answered = await peers.decide(approval_id, body, decider(request), hops) if hops is not None else None
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
