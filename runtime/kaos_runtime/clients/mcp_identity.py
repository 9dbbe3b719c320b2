"""Who an MCP tool call is made for, told to the MCP servers that ask for it (an MCPServer's
``spec.identity: forward``, ``MCP_SERVER_<NAME>_IDENTITY=forward``; docs/security.md, "Identity at
MCP servers").

The loop runs each tool call inside ``calling_for(person, groups)``; the HTTP client of a server
that forwards identity adds to each request the on-behalf-of header (core/on_behalf.py) for that
person and their groups, signed with the server's bearer token (``MCP_SERVER_<NAME>_TOKEN``) for
the server's name. A server without a token gets nothing: there is no key to sign with. The
user's own token is not forwarded.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from ..core.on_behalf import HEADER, sign
from ..core.settings import McpServer

_CALLER: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar("kaos_mcp_caller", default=None)


@contextmanager
def calling_for(person: str, groups: frozenset[str]) -> Iterator[None]:
    """Tool calls made inside are made for ``person`` (a principal's text) with ``groups``."""
    token = _CALLER.set((person, groups))
    try:
        yield
    finally:
        _CALLER.reset(token)


def identity_headers(server: McpServer) -> dict[str, str]:
    """The header a request to ``server`` carries for the current caller (none when the server
    does not ask for identity, has no token, or no call is being made for anyone)."""
    caller = _CALLER.get()
    if not (server.forward_identity and server.token and caller is not None):
        return {}
    person, groups = caller
    return {HEADER: sign(person, groups, server.token, server.name, time.time())}
