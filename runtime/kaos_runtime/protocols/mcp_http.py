"""What both of the runtime's MCP servers (the agent's own at ``/mcp``, and ``kaos-runtime mcp``)
do the same over streamable HTTP: a GET on the MCP path answers at once (``NoGetStream``)."""

from __future__ import annotations

from starlette.responses import JSONResponse


class NoGetStream:
    """ASGI wrapper: a GET on the MCP path answers at once. The server is stateless, so it has
    no server-initiated messages to stream; without this a plain GET (``Accept: */*``) would
    open an event stream that never ends. 406 when the client does not name
    ``text/event-stream`` (what upstream KAOS's servers and e2e suite expect), else 405, which
    the MCP specification and clients read as "no SSE stream at this endpoint"."""

    def __init__(self, app, path: str) -> None:
        self.app = app
        self.path = path.rstrip("/") or "/"

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and (scope["path"].rstrip("/") or "/") == self.path:
            accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1")
            sse = "text/event-stream" in accept.lower()
            status, text = (405, "Method Not Allowed: this stateless server offers no GET event stream") if sse \
                else (406, "Not Acceptable: a GET on the MCP endpoint must accept text/event-stream")
            body = {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": text}}
            headers = {"Allow": "POST, DELETE"} if sse else None
            await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)
