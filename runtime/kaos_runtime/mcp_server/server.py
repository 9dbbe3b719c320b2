"""`kaos-runtime mcp`: the python-string MCP server (streamable HTTP) with a /health route.

With API keys or an OIDC issuer configured (``AUTH_*``, as for agents), the MCP endpoint needs
``Authorization: Bearer <token>`` (kaos_runtime/core/auth.py); ``GET /health`` stays open.
A tool reads who called it with ``caller()`` (caller.py). Whatever the auth, a POST must be JSON and not come from another site's page (core/request_guard.py).
"""

from __future__ import annotations

import functools
import inspect
import logging

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..core.auth import BearerAuth, Verifier
from ..core.request_guard import RequestGuard
from ..core.settings import AuthSettings
from ..protocols.mcp_http import NoGetStream
from .caller import CallerScope, caller
from .python_string_tools import ToolsSourceError, load_tools

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


def tool_annotations(tool):
    """The MCP annotations a tool function carries as ``mcp_annotations`` (``{"destructiveHint": True}``,
    ``{"readOnlyHint": True}``, ...), for clients and for an agent's TOOL_APPROVAL_FROM_ANNOTATIONS."""
    from mcp.types import ToolAnnotations
    from pydantic import ValidationError

    given = getattr(tool, "mcp_annotations", None)
    if given is None:
        return None
    try:
        return ToolAnnotations.model_validate(given)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, item['loc'])) or 'value'}: {item['msg']}" for item in error.errors())
        raise ToolsSourceError(f"MCP_TOOLS_STRING: {tool.__name__}.mcp_annotations is not valid ({problems})") from None


def create_mcp_app(source: str, name: str, path: str, log_level: str = "INFO", auth: AuthSettings | None = None):
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    tools = load_tools(source, {"caller": caller})
    server = MCPServer(name, log_level=log_level)  # already one of the logging level names (__main__)
    for tool in tools:
        server.add_tool(reporting_errors(tool), annotations=tool_annotations(tool))
    names = [tool.__name__ for tool in tools]
    log.info("serving tools %s at %s", names, path)

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy", "name": name, "tools": names})

    starlette_app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        # Agents reach the server by its Service name or through the gateway, not only as localhost.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app = NoGetStream(starlette_app, path)
    verifier = Verifier(auth or AuthSettings())
    if verifier.enabled:
        log.info("bearer authentication on: %s needs a token (GET /health stays open)", path)
    # The SDK checks neither Origin nor Sec-Fetch-Site with DNS rebinding protection off, and
    # answers a POST that is not JSON with 400: the guard refuses both first (its body bound is the
    # SDK's own, 4 MiB).
    # An on-behalf-of header signed for this server's name tells caller() whom a call is for.
    return RequestGuard(BearerAuth(CallerScope(app), verifier, exempt=EXEMPT_PATHS, agent=name),
                        router=starlette_app.router)
