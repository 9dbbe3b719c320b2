"""Tools on MCP servers (streamable HTTP, official `mcp` SDK): discovery and calls.

Opening an MCP client costs tens of milliseconds, so each server gets one long-lived
session, held open by a background task and shared by all requests; a failed call drops it
and the next call reconnects (servers may restart or start after the agent).

A tool call runs at most once (connect_retry.py): a call that may have reached the server is
never sent again, whatever went wrong after (the connection dropped, no answer in time); its
error says so. Only a call whose every HTTP request failed to connect (the server refusing
connections, a name not resolving yet), or whose session could not be opened that way, is
tried again, a few times within seconds. What each HTTP request of a call met is noted by the
session's transport (``_NotingTransport``) on the call's ``_Attempt``, which it finds in the
context the SDK sends the call's requests in.

A server with a token (``MCP_SERVER_<NAME>_TOKEN``) is sent ``Authorization: Bearer <token>``
on every request; a refusal (HTTP 401/403, which the SDK reports only as "an error response")
is named in the error. A server that asks for the caller's identity gets it on each call
(mcp_identity.py).
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar

from ..core.errors import describe
from ..core.settings import McpServer
from .connect_retry import RETRY_DELAYS, retry_unsent
from .mcp_identity import identity_headers
from .refresh import Discovery

log = logging.getLogger("kaos_runtime.mcp")

CONNECT_TIMEOUT_SECONDS = 10.0


class ToolError(Exception):
    """A tool could not be run; the message says why."""


class _Attempt:
    """One try at a call (or at opening a session): whether one of its HTTP requests failed to
    connect, and whether one may have reached the server."""

    __slots__ = ("refused", "reached")

    def __init__(self) -> None:
        self.refused = False
        self.reached = False

    @property
    def nothing_sent(self) -> bool:
        return self.refused and not self.reached


class _Unsent(Exception):
    """An attempt none of whose requests reached the server: it may be made again."""


class _MayHaveRun(Exception):
    """An attempt whose call may have reached the server: never made again."""


_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("kaos_mcp_attempt", default=None)


def _noting_transport(inner):
    """``inner`` (the SDK's HTTP transport) noting on the current ``_Attempt`` what each request
    met: a failed connect (nothing sent), or anything else (it may have reached the server)."""
    import httpx2

    class _NotingTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request):
            attempt = _ATTEMPT.get()
            try:
                response = await inner.handle_async_request(request)
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                if attempt is not None:
                    attempt.refused = True
                raise
            except BaseException:
                if attempt is not None:
                    attempt.reached = True
                raise
            if attempt is not None:
                attempt.reached = True
            return response

        async def aclose(self) -> None:
            await inner.aclose()

    return _NotingTransport()


def result_text(result) -> str:
    """The text of a CallToolResult: its text parts, else its structured content."""
    texts = [getattr(part, "text", None) for part in result.content or []]
    texts = [text for text in texts if text is not None]
    if texts:
        return "\n".join(texts)
    if getattr(result, "structured_content", None) is not None:
        return str(result.structured_content)
    return ""


def _annotations(tool) -> dict:
    """The hints a tool's MCP annotations give (``readOnlyHint``, ``destructiveHint``, ...), by their MCP names."""
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return {}
    return annotations.model_dump(by_alias=True, exclude_none=True)


class McpConnection:
    def __init__(self, server: McpServer, timeout: float, pause=asyncio.sleep) -> None:
        self.server = server
        self.timeout = timeout or None
        self.pause = pause  # the wait between attempts of a call that reached nothing
        self._client = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._refused: int | None = None  # HTTP status of the last refused request (401, 403)

    async def _connected(self):
        async with self._lock:
            if self._client is None:
                await self._connect()
            return self._client

    async def _connect(self) -> None:
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        asyncio.create_task(self._hold(ready, stop))
        try:
            self._client = await asyncio.wait_for(asyncio.shield(ready), CONNECT_TIMEOUT_SECONDS)
        except BaseException:
            stop.set()
            raise
        self._stop = stop

    def _http_client(self):
        """The HTTP client of a session: the MCP SDK's defaults, the server's token, a hook that
        notes refusals (the SDK turns them into a bare JSON-RPC error), and a transport that notes
        what each request met (``_noting_transport``)."""
        import httpx2
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        headers = {"Authorization": f"Bearer {self.server.token}"} if self.server.token else None
        http = httpx2.AsyncClient(headers=headers, transport=_noting_transport(httpx2.AsyncHTTPTransport()),
                                  timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT))

        async def note_refusal(response) -> None:
            if response.status_code in (401, 403):
                self._refused = response.status_code

        async def tell_identity(request) -> None:  # runs in the context of the call that sends it
            request.headers.update(identity_headers(self.server))

        http.event_hooks["response"].append(note_refusal)
        if self.server.forward_identity:
            http.event_hooks["request"].append(tell_identity)
        return http

    async def _hold(self, ready: asyncio.Future, stop: asyncio.Event) -> None:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        client = None
        try:
            async with self._http_client() as http, Client(
                streamable_http_client(self.server.url, http_client=http), read_timeout_seconds=self.timeout,
            ) as client:
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except BaseException as error:  # anyio wraps failures in exception groups
            if not ready.done():
                ready.set_exception(ToolError(self._describe(error)))
            else:
                log.debug("MCP session to %s ended: %s", self.server.url, describe(error))
        finally:
            if self._client is client:
                self._client = None

    def _describe(self, error: BaseException) -> str:
        """The error, or what the server refused: HTTP 401 names the token this agent sent (or not)."""
        status, self._refused = self._refused, None
        if status is None:
            return describe(error)
        if status == 403:
            return "HTTP 403 Forbidden: the server refused this agent's token"
        given = "its token (MCP_SERVER_<NAME>_TOKEN) was not accepted" if self.server.token else \
            "the server requires a bearer token and this agent sends none (MCP_SERVER_<NAME>_TOKEN)"
        return f"HTTP 401 Unauthorized: {given}"

    def drop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._client = None
        self._stop = None

    def _failed(self, error: BaseException, why: str = "") -> ToolError:
        text = str(error) if isinstance(error, ToolError) else self._describe(error)  # a session not opened
        return ToolError(f"MCP server {self.server.name} ({self.server.url}): {text}{why}")

    async def _listing(self, call):
        """Run `call(client)`, a request that may run twice (tools/list): again on a new session
        once if the held one has gone bad (never after a timeout)."""
        for attempt in (1, 2):
            try:
                client = await self._connected()
                return await asyncio.wait_for(call(client), self.timeout)
            except Exception as error:
                self.drop()
                if attempt == 2 or isinstance(error, asyncio.TimeoutError):
                    raise self._failed(error) from error

    async def _at_most_once(self, call):
        """Run `call(client)` (a tool call) at most once: tried again only while neither opening
        the session nor the call reached the server (connect_retry.py)."""

        async def attempt():
            opening = _Attempt()
            token = _ATTEMPT.set(opening)  # the session's tasks start in this context: its requests
            try:
                client = await self._connected()
            except Exception as error:
                self.drop()
                raise (_Unsent(error) if opening.nothing_sent else error)
            finally:
                _ATTEMPT.reset(token)
            sending = _Attempt()
            token = _ATTEMPT.set(sending)  # the SDK sends the call's requests in this context
            try:
                return await asyncio.wait_for(call(client), self.timeout)
            except Exception as error:
                self.drop()
                raise (_Unsent(error) if sending.nothing_sent else _MayHaveRun(error))
            finally:
                _ATTEMPT.reset(token)

        try:
            return await retry_unsent(attempt, lambda error: isinstance(error, _Unsent),
                                      f"MCP server {self.server.name}", self.pause)
        except _Unsent as error:
            raise self._failed(error.args[0], f" ({len(RETRY_DELAYS) + 1} attempts, none reached the server)") \
                from error.args[0]
        except _MayHaveRun as error:
            cause = error.args[0]
            why = (f": no answer within {self.timeout:g}s (TOOL_TIMEOUT_SECONDS)"
                   if isinstance(cause, asyncio.TimeoutError) else "")
            raise self._failed(cause, why + "; the call may have run on the server, so it was not "
                                            "sent again (a tool call runs at most once)") from cause
        except Exception as error:  # opening the session failed after reaching the server (401, ...)
            raise self._failed(error) from error

    async def list_tools(self) -> list[dict]:
        result = await self._listing(lambda client: client.list_tools())
        return [
            {"name": tool.name, "description": tool.description or "", "inputSchema": tool.input_schema or {},
             "annotations": _annotations(tool)}
            for tool in result.tools
        ]

    async def call_tool(self, name: str, arguments: dict) -> tuple[str, bool]:
        result = await self._at_most_once(lambda client: client.call_tool(name, arguments))
        return result_text(result), bool(result.is_error)


class ToolCatalog(Discovery):
    """The tools of every configured MCP server, discovered at startup and again lazily."""

    def __init__(self, servers: tuple[McpServer, ...], timeout: float) -> None:
        super().__init__(self._discover)
        self.connections = {server.name: McpConnection(server, timeout) for server in servers}
        self._tools: dict[str, dict] = {}
        self._owner: dict[str, str] = {}
        self._annotations: dict[str, dict] = {}
        self._discovered: set[str] = set()
        self._failures: dict[str, str] = {}  # server -> why its last discovery failed

    @property
    def complete(self) -> bool:
        return len(self._discovered) == len(self.connections)

    def skills(self) -> list[dict]:
        return list(self._tools.values())

    async def discover(self, wait: float | None = None) -> None:
        """List tools on every server not yet discovered; wait at most `wait` seconds."""
        await self._refresher.run(wait)

    async def _discover(self) -> None:
        pending = [name for name in self.connections if name not in self._discovered]
        results = await asyncio.gather(
            *(self.connections[name].list_tools() for name in pending), return_exceptions=True
        )
        for name, result in zip(pending, results):
            if isinstance(result, BaseException):
                self._failures[name] = str(result) if isinstance(result, ToolError) else describe(result)
                log.warning("tool discovery on %s failed: %s", name, describe(result))
                continue
            self._failures.pop(name, None)
            self._discovered.add(name)
            for tool in result:
                self._annotations[tool["name"]] = tool.pop("annotations", {})
                self._tools[tool["name"]] = tool
                self._owner[tool["name"]] = name
            log.info("MCP server %s offers %s", name, [tool["name"] for tool in result])

    def info(self, tool: str) -> tuple[str | None, dict | None]:
        """The MCP server that offers ``tool`` and the tool's annotations (None, None: unknown)."""
        return self._owner.get(tool), self._annotations.get(tool)

    async def call(self, tool: str, arguments: dict) -> str:
        if tool not in self._owner:
            await self.refresh_if_incomplete()
        server = self._owner.get(tool)
        if server is None:
            known = ", ".join(sorted(self._tools)) or "none"
            unreachable = [name for name in self.connections if name not in self._discovered]
            refused = [self._failures[name] for name in unreachable if "HTTP 40" in self._failures.get(name, "")]
            hint = f"; not reachable yet: MCP server {', '.join(unreachable)}" if unreachable else ""
            hint += "".join(f" ({reason})" for reason in refused)
            raise ToolError(f"unknown tool {tool!r} (available tools: {known}{hint})")
        text, is_error = await self.connections[server].call_tool(tool, arguments)
        if is_error:
            raise ToolError(f"tool {tool!r} reported an error: {text}")
        return text

    async def close(self) -> None:
        for connection in self.connections.values():
            connection.drop()
