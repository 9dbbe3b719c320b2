"""Who called a python-string tool: ``caller()`` in MCP_TOOLS_STRING (docs/security.md,
"Identity at MCP servers").

BearerAuth (core/auth.py) puts the principal a request acts for in the ASGI scope: the agent's
key, or, when the agent sent the on-behalf-of header signed with that key for this server's name
(an MCPServer with ``spec.identity: forward``), the person the agent's run acts for with their
groups, via the key. ``CallerScope`` keeps it in a context variable for the request, where the
tool's code reads it with ``caller()``."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from ..core.auth import ACTING
from ..core.principal import ANONYMOUS, Principal


@dataclass(frozen=True)
class Caller:
    """``user``: the person (``user:alice``, ``key:2``, or ``anonymous`` on a server without
    auth); ``groups``: theirs (``group:<name>`` each); ``via``: who relayed them, the principal
    this server authenticated last (``("key:1",)``); ``text``: all of it, as agents record it."""

    user: str = ANONYMOUS
    groups: frozenset[str] = frozenset()
    via: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return Principal(self.user, "none", self.via).text


_CALLER: ContextVar[Caller] = ContextVar("kaos_tool_caller", default=Caller())


def caller() -> Caller:
    """Who the current tool call is for."""
    return _CALLER.get()


class CallerScope:
    """ASGI middleware below BearerAuth: the request's acting principal as ``caller()``."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        acting = scope.get(ACTING)
        if acting is None:
            await self.app(scope, receive, send)
            return
        token = _CALLER.set(Caller(acting.id, acting.groups, acting.via))
        try:
            await self.app(scope, receive, send)
        finally:
            _CALLER.reset(token)
