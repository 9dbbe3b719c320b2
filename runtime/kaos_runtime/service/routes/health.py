"""``GET /health`` (the process answers) and ``GET /ready`` (discovery done, model client loaded if asked)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..responses import json_response
from ..runtime import Runtime


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()

    async def health(_: Request) -> Response:
        return json_response({"status": "healthy", "name": config.name, "timestamp": int(time.time())})

    async def ready(_: Request) -> Response:
        if not runtime.ready:
            return json_response({"status": "starting", "name": config.name, "waiting_for": runtime.waiting_for}, 503)
        return json_response({
            "status": "ready",
            "name": config.name,
            "model_client_loaded": runtime.model.loaded,
            "tools_discovered": runtime.tools.complete,
            "peers_discovered": runtime.peers.complete,
            # ok | degraded (the agent answers without it; the MemoryStore's MemoryDegraded) | off
            "long_term_memory": runtime.long_term.status() if runtime.long_term is not None else {"enabled": False,
                                                                                                   "status": "off"},
        })

    routes.add_route("/health", health, methods=["GET"])
    routes.add_route("/ready", ready, methods=["GET"])
    return routes
