"""What this agent is: its KAOS card (``/.well-known/agent``, ``/.well-known/agent.json``) and
``GET /v1/models`` (the agent as the one model of its OpenAI API). The A2A card is
kaos_runtime.protocols.a2a_server's."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...core.settings import AgentSettings
from ...protocols.public_url import public_base_url
from ..responses import json_response
from ..runtime import Runtime


def agent_card(config: AgentSettings, url: str, skills: list[dict]) -> dict:
    capabilities = ["message_processing", "task_execution"]
    if config.mcp_servers:
        capabilities.append("tool_execution")
    if config.peers or config.a2a_peers:
        capabilities.append("task_delegation")
    return {
        "name": config.name,
        "description": config.description,
        "url": url,
        "skills": skills,
        "capabilities": capabilities,
    }


def router(runtime: Runtime) -> APIRouter:
    config = runtime.config
    routes = APIRouter()

    async def card(request: Request) -> Response:
        await runtime.tools.refresh_if_incomplete()
        return json_response(agent_card(config, public_base_url(request), runtime.tools.skills()))

    async def models(_: Request) -> Response:
        return json_response({"object": "list", "data": [
            {"id": config.name, "object": "model", "created": int(time.time()), "owned_by": "kaos"}
        ]})

    routes.add_route("/.well-known/agent", card, methods=["GET"])
    routes.add_route("/.well-known/agent.json", card, methods=["GET"])
    routes.add_route("/v1/models", models, methods=["GET"])
    return routes
