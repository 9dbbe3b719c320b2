"""Forwarding one HTTP request to a workload, streaming its answer back (raw ASGI).

The local gateway (`kaos up`) and the console in a cluster both serve the gateway's URL layout
and hand each request to a :class:`Forwarder`: the body is read, hop-by-hop headers are
dropped, the answer streams through chunk by chunk (SSE included), and a client that goes
away closes the upstream connection too, so the workload stops the work it started.

aiohttp is the upstream client: per request it costs a fraction of httpx's time, which keeps
the gateway's overhead under a millisecond.
"""

from __future__ import annotations

import asyncio
import json
from typing import Iterable

import aiohttp
from multidict import CIMultiDict
from yarl import URL

HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
    b"trailer", b"transfer-encoding", b"upgrade", b"host",
}

Headers = Iterable[tuple[bytes, bytes]]


async def send_json(send, status: int, payload: dict, headers: Headers = ()) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers,
    ]})
    await send({"type": "http.response.body", "body": body})


async def read_body(receive, limit: int | None = None) -> bytes:
    """The request body; with ``limit``, reading stops past ``limit`` bytes (the caller sees
    more than ``limit`` and refuses it, without holding a huge body in memory)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body") or (limit is not None and size > limit):
            break
    return b"".join(chunks)


def forwarded_headers(scope, prefix: str) -> dict[str, str]:
    """What the client used: its scheme, its Host (else this server's address) and the path
    prefix the route strips, so that a workload can name its public URL (an agent's cards)."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"host"), "")
    if not host and scope.get("server"):
        host = "%s:%d" % tuple(scope["server"])
    return {"X-Forwarded-Proto": scope.get("scheme") or "http", "X-Forwarded-Host": host,
            "X-Forwarded-Prefix": prefix}


def _declared_length(scope) -> int:
    """The request's Content-Length (0 when absent or not a number)."""
    value = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
    return int(value) if value.isdigit() else 0


async def _disconnected(receive) -> None:
    """Returns when the client closes the connection (after the body, uvicorn's receive()
    answers only then)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class Forwarder:
    """Forwards requests over one pooled aiohttp session; ``error_headers`` go on the JSON
    errors it answers itself (503 unreachable, 504 too slow)."""

    def __init__(self, error_headers: Headers = ()) -> None:
        self.error_headers = tuple(error_headers)
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

    async def forward(self, scope, receive, send, url: URL, timeout: float | None, what: str,
                      extra_headers: dict[str, str] | None = None, max_body: int | None = None) -> None:
        """Send the request to ``url`` (its query added) and stream the answer back; ``what``
        names the workload in the errors a client gets when it cannot be reached. A body over
        ``max_body`` bytes is 413: refused by its Content-Length, else once that many have
        arrived (never held whole)."""
        if max_body is not None and _declared_length(scope) > max_body:
            await self._too_large(send, what, max_body)
            return
        body = await read_body(receive, limit=max_body)
        if max_body is not None and len(body) > max_body:
            await self._too_large(send, what, max_body)
            return
        task = asyncio.current_task()
        gone = asyncio.ensure_future(_disconnected(receive))
        gone.add_done_callback(lambda watcher: watcher.cancelled() or task.cancel())
        try:
            await self._proxy(scope, body, send, url, timeout, what, extra_headers or {})
        except asyncio.CancelledError:
            if not (gone.done() and not gone.cancelled()):
                raise
            task.uncancel()  # the client went away: the upstream request was dropped with this task
        finally:
            gone.cancel()

    async def _too_large(self, send, what: str, max_body: int) -> None:
        """413, and the connection closed: the rest of the body is not read."""
        await send_json(send, 413, {"error": "request body too large",
                                    "detail": f"{what} takes bodies of at most {max_body} bytes through the gateway"},
                        (*self.error_headers, (b"connection", b"close")))

    async def _proxy(self, scope, body: bytes, send, url: URL, timeout: float | None, what: str,
                     extra_headers: dict[str, str]) -> None:
        headers = CIMultiDict(
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP
        )
        headers.update(extra_headers)
        query = (scope.get("query_string") or b"").decode("latin-1")
        if query:  # as the client sent it: encoded already, never encoded again
            url = URL(f"{url}?{query}", encoded=True)
        try:
            response = await self.session.request(
                scope["method"], url, headers=headers, data=body or None, allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=timeout),
            )
        except aiohttp.ClientError as error:
            await send_json(send, 503, {"error": "unavailable", "detail": f"{what} does not answer: {error}"},
                            self.error_headers)
            return
        except asyncio.TimeoutError:
            await send_json(send, 504, {"error": "timeout", "detail": f"{what} did not answer in time"},
                            self.error_headers)
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
