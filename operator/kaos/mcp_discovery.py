"""Discovery of an MCPServer's tools (its ``status.tools``) with MCP ``tools/list``.

``ToolDiscovery`` is the one component both control planes use: it asks a server once per
endpoint, keeps the answer, and while the server does not answer reports no tools and asks
again after a backoff. The operator awaits it inside a reconcile; the local control plane
runs it in the background so that an unreachable server does not hold up its queue.

A server guarded by bearer authentication (spec.auth) refuses the control plane's tools/list
with 401: the control plane holds no credential. KAOS's python-string server names its tools
on its open probe path, ``GET /health``, which is read instead.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Hashable
from urllib.parse import urlsplit, urlunsplit

from kaos.backoff import Backoff

DISCOVERY_TIMEOUT_SECONDS = 10.0

log = logging.getLogger("kaos.mcp_discovery")


class ToolsUnavailable(RuntimeError):
    """The server cannot be reached or does not answer tools/list."""


async def discover_tools(url: str, timeout: float = DISCOVERY_TIMEOUT_SECONDS) -> list[str]:
    """The sorted tool names the MCP server at ``url`` offers; raises ToolsUnavailable."""
    from mcp import Client  # imported here: only MCPServers need it
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    refused: list[int] = []

    async def note_refusal(response) -> None:
        if response.status_code in (401, 403):
            refused.append(response.status_code)

    try:
        async with asyncio.timeout(timeout), create_mcp_http_client() as http:
            http.event_hooks["response"].append(note_refusal)
            try:
                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=timeout) as client:
                    result = await client.list_tools()
            except Exception as error:  # the SDK raises exception groups from its task group
                if not refused:
                    raise
                return await _named_on_health(http, url, error)
    except ToolsUnavailable:
        raise
    except Exception as error:
        raise ToolsUnavailable(f"tools/list on {url} failed: {_describe(error)}") from None
    return sorted(tool.name for tool in result.tools)


async def _named_on_health(http, url: str, refusal: BaseException) -> list[str]:
    """The tools a guarded python-string server names on ``GET /health`` (next to its MCP path)."""
    health = urlunsplit(urlsplit(url)._replace(path="/health", query="", fragment=""))
    try:
        response = await http.get(health)
        names = response.json().get("tools") if response.status_code == 200 else None
    except Exception:  # not KAOS's python-string server: no such route, or not JSON
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ToolsUnavailable(f"tools/list on {url} was refused (HTTP 401/403: the server requires a token, "
                               f"which the control plane does not hold) and {health} names no tools") from None
    return sorted(names)


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return str(error) or type(error).__name__


@dataclass(frozen=True)
class _Answer:
    key: Hashable  # (url, version): what was asked
    names: list[str]
    found: bool  # False: the server did not answer; asked again once the backoff has passed


class ToolDiscovery:
    """The tools of each MCPServer (any hashable key, e.g. a Ref), discovered once per endpoint.

    ``version`` tells apart two servers on the same URL (the local control plane passes its
    process, which changes when the server is restarted with another spec).
    """

    def __init__(
        self,
        backoff: Backoff | None = None,
        list_tools: Callable[[str], Awaitable[list[str]]] = discover_tools,
    ):
        self.backoff = backoff or Backoff()
        self.list_tools = list_tools
        self._answers: dict[Any, _Answer] = {}

    def known(self, server, url: str, version: Hashable = None) -> list[str] | None:
        """The tool names to report now, or None when tools/list is to be asked (again)."""
        answer = self._answers.get(server)
        if answer is None or answer.key != (url, version):
            return None
        if answer.found or self.backoff.blocked(server):
            return answer.names
        return None

    async def tools(self, server, url: str, version: Hashable = None, logger=log) -> list[str]:
        """The known names, else tools/list now; [] while the server does not answer."""
        known = self.known(server, url, version)
        if known is not None:
            return known
        try:
            names = await self.list_tools(url)
        except ToolsUnavailable as error:
            delay = self.backoff.fail(server)
            logger.warning(f"{error} (retrying in {delay:g}s)")
            self._answers[server] = _Answer((url, version), [], False)
            return []
        self.backoff.succeed(server)
        self._answers[server] = _Answer((url, version), names, True)
        return names

    def retry_due(self, server) -> bool:
        """A server that did not answer, whose backoff has passed."""
        answer = self._answers.get(server)
        return answer is not None and not answer.found and not self.backoff.blocked(server)

    def retry_in(self, server) -> float:
        """Seconds until a server that did not answer is asked again (0 after an answer)."""
        return self.backoff.remaining(server)

    def forget(self, server) -> None:
        self._answers.pop(server, None)
        self.backoff.succeed(server)
