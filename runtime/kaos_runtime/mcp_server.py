"""`kaos-runtime mcp`: the python-string MCP server (streamable HTTP) with a /health route.

With API keys or an OIDC issuer configured (``AUTH_*``, as for agents), the MCP endpoint needs
``Authorization: Bearer <token>`` (kaos_runtime/auth.py); ``GET /health`` stays open.
"""

from __future__ import annotations

import functools
import inspect
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse

from .auth import BearerAuth, Verifier
from .python_string_tools import load_tools
from .settings import AuthSettings

log = logging.getLogger("kaos_runtime.mcp_server")

EXEMPT_PATHS = frozenset({"/health"})  # the probe path; it names the tools, which is how a
# control plane lists those of a guarded server


def reporting_errors(tool):
    """The tool, raising the SDK's ToolError for any exception so that the caller sees the
    message (the SDK hides the text of unexpected exceptions); the signature is kept."""
    from mcp.server.mcpserver.exceptions import ToolError

    def as_tool_error(error: Exception) -> ToolError:
        return ToolError(f"{type(error).__name__}: {error}")

    if inspect.iscoroutinefunction(tool):
        @functools.wraps(tool)
        async def wrapper(*args, **kwargs):
            try:
                return await tool(*args, **kwargs)
            except ToolError:
                raise
            except Exception as error:
                raise as_tool_error(error) from error
    else:
        @functools.wraps(tool)
        def wrapper(*args, **kwargs):
            try:
                return tool(*args, **kwargs)
            except ToolError:
                raise
            except Exception as error:
                raise as_tool_error(error) from error
    return wrapper


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


def create_mcp_app(source: str, name: str, path: str, log_level: str = "INFO", auth: AuthSettings | None = None):
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    tools = load_tools(source)
    server = MCPServer(name, log_level=log_level)  # already one of the logging level names (__main__)
    for tool in tools:
        server.add_tool(reporting_errors(tool))
    names = [tool.__name__ for tool in tools]
    log.info("serving tools %s at %s", names, path)

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy", "name": name, "tools": names})

    app = NoGetStream(server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        # Agents reach the server by its Service name or through the gateway, not only as localhost.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    ), path)
    verifier = Verifier(auth or AuthSettings())
    if verifier.enabled:
        log.info("bearer authentication on: %s needs a token (GET /health stays open)", path)
    return BearerAuth(app, verifier, exempt=EXEMPT_PATHS)
