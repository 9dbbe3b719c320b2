"""``GET /metrics``: the agent's Prometheus metrics (only with METRICS_ENABLED)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.metrics import CONTENT_TYPE
from ..runtime import Runtime


def router(runtime: Runtime) -> APIRouter:
    routes = APIRouter()

    async def metrics(_: Request) -> Response:
        # Nothing here reads the memory (the active sessions are counted in process), so a
        # scrape answers while Redis is down.
        return Response(runtime.metrics.exposition(), media_type=CONTENT_TYPE)

    routes.add_route("/metrics", metrics, methods=["GET"])
    return routes
