"""The local gateway: the cluster's HTTPRoute layout on 127.0.0.1, as a raw ASGI app.

``/<namespace>/<agent|modelapi|mcp>/<name>/<rest>`` goes to the workload's loopback port
with the prefix replaced by ``/``; bodies stream through chunk by chunk (SSE included). A
client that goes away closes the upstream connection too, so the workload stops the work.
The workload learns the address its client used from ``X-Forwarded-Proto``, ``X-Forwarded-Host``
and ``X-Forwarded-Prefix`` (the gateway sets them, replacing any the client sent), so that an
agent's cards name the gateway's URL, not its loopback port.
"""

from __future__ import annotations

import asyncio
import json
from typing import Callable

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from kaos.local.routes import Backend, Route, gateway_path, parse_route

HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
    b"trailer", b"transfer-encoding", b"upgrade", b"host",
}


async def send_json(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


async def _disconnected(receive) -> None:
    """Returns when the client closes the connection (after the body, uvicorn's receive()
    answers only then)."""
    while (await receive())["type"] != "http.disconnect":
        pass


def forwarded_headers(scope, route: Route) -> dict[str, str]:
    """What the client used: its scheme, its Host (else the gateway's address) and the prefix."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"host"), "")
    if not host and scope.get("server"):
        host = "%s:%d" % tuple(scope["server"])
    return {"X-Forwarded-Proto": scope.get("scheme") or "http", "X-Forwarded-Host": host,
            "X-Forwarded-Prefix": gateway_path(route.namespace, route.kind, route.name)}


async def read_body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


class Gateway:
    """ASGI app; ``backend_of(route)`` says where a route goes (from the control plane's state).

    aiohttp is the upstream client: per request it costs a fraction of httpx's time, which
    keeps the gateway's overhead under a millisecond.
    """

    def __init__(self, backend_of: Callable[[Route], Backend]):
        self.backend_of = backend_of
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=30),
                auto_decompress=False,
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        route = parse_route(scope["path"])
        if route is None:
            await send_json(send, 404, {"error": "not found", "path": scope["path"],
                                        "detail": "gateway paths are /<namespace>/<agent|modelapi|mcp>/<name>/..."})
            return
        backend = self.backend_of(route)
        if backend.port is None:
            await send_json(send, backend.status, {"error": "not found" if backend.status == 404 else "unavailable",
                                                   "detail": backend.message})
            return
        body = await read_body(receive)
        task = asyncio.current_task()
        gone = asyncio.ensure_future(_disconnected(receive))
        gone.add_done_callback(lambda watcher: watcher.cancelled() or task.cancel())
        try:
            await self._proxy(scope, body, send, route, backend)
        except asyncio.CancelledError:
            if not (gone.done() and not gone.cancelled()):
                raise
            task.uncancel()  # the client went away: the upstream request was dropped with this task
        finally:
            gone.cancel()

    async def _proxy(self, scope, body: bytes, send, route: Route, backend: Backend) -> None:
        headers = CIMultiDict(
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP
        )
        headers.update(forwarded_headers(scope, route))
        query = scope.get("query_string") or b""
        url = URL.build(scheme="http", host="127.0.0.1", port=backend.port, path=route.path,
                        query_string=query.decode("latin-1"), encoded=True)
        try:
            response = await self.session.request(
                scope["method"], url, headers=headers, data=body or None, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=backend.timeout),
            )
        except aiohttp.ClientConnectionError:
            await send_json(send, 503, {"error": "unavailable", "detail": f"{route.kind} {route.name} is not running"})
            return
        except asyncio.TimeoutError:
            await send_json(send, 504, {"error": "timeout", "detail": f"{route.kind} {route.name} did not answer in time"})
            return
        try:
            await send({
                "type": "http.response.start",
                "status": response.status,
                "headers": [(k, v) for k, v in response.raw_headers if k.lower() not in HOP_BY_HOP],
            })
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except (aiohttp.ClientError, asyncio.TimeoutError):
            await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass  # the client went away mid-response (uvicorn's ClientDisconnected)
        finally:
            response.release()
