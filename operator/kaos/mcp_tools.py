"""The tool names an MCP server offers (status.tools of an MCPServer), via MCP tools/list.

Shared by the operator and the local control plane."""

from __future__ import annotations

import asyncio

DISCOVERY_TIMEOUT_SECONDS = 10.0


async def discover_tools(url: str, timeout: float = DISCOVERY_TIMEOUT_SECONDS) -> list[str]:
    """Raises ToolsUnavailable when the server cannot be reached or does not answer."""
    from mcp import Client  # imported here: only MCPServers need it

    try:
        async with asyncio.timeout(timeout):
            async with Client(url, read_timeout_seconds=timeout) as client:
                result = await client.list_tools()
    except Exception as error:  # the SDK raises exception groups from its task group
        raise ToolsUnavailable(f"tools/list on {url} failed: {_describe(error)}") from None
    return sorted(tool.name for tool in result.tools)


class ToolsUnavailable(RuntimeError):
    pass


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return str(error) or type(error).__name__
