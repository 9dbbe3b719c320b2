"""The gateway as a proxy: chunk-by-chunk streaming, prefix stripping, JSON 404/503."""

import asyncio
import contextlib

import httpx
import pytest
import uvicorn

from kaos.local.gateway import Gateway
from kaos.local.ports import free_port
from kaos.routes import Backend
from tests.support.polling import eventually


class Upstream:
    """A raw HTTP server that sends one SSE event, then waits to be told before the second."""

    def __init__(self):
        self.release = asyncio.Event()
        self.closed = asyncio.Event()  # set when the gateway closes the connection
        self.paths: list[str] = []

    async def handle(self, reader, writer):
        request = await reader.readuntil(b"\r\n\r\n")
        self.paths.append(request.split(b" ")[1].decode())
        asyncio.ensure_future(reader.read()).add_done_callback(lambda _: self.closed.set())
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        for event in (b"data: one\n\n", b"data: two\n\n"):
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
            await self.release.wait()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def running(app, port):
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, 10, interval=0.01, what="the gateway's server started")
    try:
        yield
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def setup():
    upstream = Upstream()
    upstream_server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    upstream_port = upstream_server.sockets[0].getsockname()[1]

    def backend_of(route):
        if route.name == "up":
            return Backend(upstream_port)
        if route.name == "starting":
            return Backend(None, 503, "Agent starting is not ready (phase Pending)")
        return Backend(None, 404, f"no {route.kind} {route.name!r}")

    gateway = Gateway(backend_of)
    port = free_port()
    async with running(gateway, port):
        yield f"http://127.0.0.1:{port}", upstream
    await gateway.aclose()
    upstream_server.close()


async def test_sse_passes_through_chunk_by_chunk(setup):
    url, upstream = setup
    async with httpx.AsyncClient(timeout=10) as client:
        async with client.stream("GET", f"{url}/ns/agent/up/v1/stream?x=1") as response:
            assert response.headers["content-type"] == "text/event-stream"
            chunks = response.aiter_text()
            first = await asyncio.wait_for(chunks.__anext__(), 5)  # arrives before the second is sent
            assert first == "data: one\n\n"
            upstream.release.set()
            rest = "".join([c async for c in chunks])
    assert rest == "data: two\n\n"
    assert upstream.paths == ["/v1/stream?x=1"]


async def test_unknown_and_unready_routes_answer_json(setup):
    url, _ = setup
    async with httpx.AsyncClient(timeout=10) as client:
        missing = await client.get(f"{url}/ns/agent/missing/health")
        starting = await client.get(f"{url}/ns/agent/starting/health")
        no_route = await client.get(f"{url}/favicon.ico")
    assert missing.status_code == 404 and missing.json()["detail"] == "no Agent 'missing'"
    assert starting.status_code == 503 and "not ready" in starting.json()["detail"]
    assert no_route.status_code == 404 and "gateway paths are" in no_route.json()["detail"]


async def test_backend_gone_is_503():
    port = free_port()  # nothing listens there
    gateway = Gateway(lambda route: Backend(port))
    gateway_port = free_port()
    async with running(gateway, gateway_port):
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.get(f"http://127.0.0.1:{gateway_port}/ns/agent/gone/health")
    await gateway.aclose()
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"


async def test_a_client_that_goes_away_closes_the_upstream_connection(setup):
    url, upstream = setup
    async with httpx.AsyncClient(timeout=10) as client:
        async with client.stream("GET", f"{url}/ns/agent/up/v1/stream") as response:
            await response.aiter_text().__anext__()  # the first event; the upstream now waits
    # The client has closed its connection: the gateway drops its own to the upstream, which
    # sees the end of its connection while it still holds the second event.
    await asyncio.wait_for(upstream.closed.wait(), 10)
