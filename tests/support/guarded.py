"""A stand-in for a workload guarded by bearer authentication (an aiohttp handler): 401 with the
runtime's challenge without the expected token, else what it received."""

from __future__ import annotations

import aiohttp.web

CHALLENGE = 'Bearer realm="kaos"'


def guarded_handler(token: str):
    """The handler: ``{"path", "authorization"}`` for ``Bearer <token>``, else 401 + WWW-Authenticate."""

    async def handle(request: aiohttp.web.Request) -> aiohttp.web.Response:
        if request.headers.get("Authorization") != f"Bearer {token}":
            return aiohttp.web.json_response({"detail": "authentication required"}, status=401,
                                             headers={"WWW-Authenticate": CHALLENGE})
        return aiohttp.web.json_response({"path": request.path, "authorization": request.headers["Authorization"]})

    return handle
