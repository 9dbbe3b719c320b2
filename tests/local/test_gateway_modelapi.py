"""What the gateway of `kaos up` routes to a ModelAPI (issue 26): the paths that serve models,
not the model server's admin API (LiteLLM's keys, config, spend, UI...; its /health, which runs
the models and answers with tracebacks), unless spec.gatewayRoute.adminRoutes; and bodies up to
MODELAPI_MAX_BODY_BYTES, counted as they arrive. The control plane runs a stand-in HTTP server
in place of LiteLLM; the gateway is the real server over HTTP."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest
import uvicorn

from kaos.local.ports import free_port
from kaos.local.server import App, guarded
from kaos.routes import MODELAPI_MAX_BODY_BYTES, MODELAPI_SERVING_PATHS, modelapi_serves
from tests.local.test_controlplane import MODELAPI, phase
from tests.support.polling import eventually

ADMIN_PATHS = ["/key/generate", "/key/list", "/user/new", "/config/update", "/debug/asyncio-tasks", "/spend/logs",
               "/ui", "/model/new", "/health", "/health/readiness", "/v1/model/info", "/v1/mcp/server/register",
               "/api/pull", "/api/delete", "/api/create", "/api/push", "/api/copy"]
# Sent as they are (HTTP clients resolve them first), a server might resolve them to an admin path.
DOT_PATHS = ["/v1/models/../../key/list", "/models/./x", "/v1/chat/completions/.."]


@contextlib.asynccontextmanager
async def serving(plane):
    port = free_port()
    app = App(plane, port, lambda: None, "token")
    server = uvicorn.Server(uvicorn.Config(guarded(app, port, ()), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, 10, interval=0.01, what="the gateway")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/default/modelapi/llm", timeout=30) as http:
            yield http
    finally:
        server.should_exit = True
        await app.gateway.aclose()
        await task


@pytest.mark.parametrize("path", [*ADMIN_PATHS, *DOT_PATHS])
def test_admin_and_debug_paths_are_not_serving_paths(path):
    assert not modelapi_serves(path)


@pytest.mark.parametrize("path", [*MODELAPI_SERVING_PATHS, "/v1/models/gpt-4o-mini", "/api/show"])
def test_serving_paths_are(path):
    assert modelapi_serves(path)


async def test_only_the_serving_paths_of_a_modelapi_are_routed(control):  # noqa: F811
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Ready", timeout=30)
    async with serving(control) as http:
        for path in ("/v1/models", "/health/liveliness", "/api/tags"):
            assert (await http.get(path)).status_code == 200, path  # the stand-in answers every GET
        for path in ADMIN_PATHS:
            refused = await http.get(path)
            assert refused.status_code == 404, path
            assert "spec.gatewayRoute.adminRoutes" in refused.json()["detail"], path

        opened = {**MODELAPI, "spec": {**MODELAPI["spec"], "gatewayRoute": {"adminRoutes": True}}}
        control.apply([(opened, "m.yaml")])
        await eventually(lambda: control.store.resources[next(iter(control.store.resources))]["spec"]
                         .get("gatewayRoute"), timeout=10)
        assert (await http.get("/key/list")).status_code == 200, "adminRoutes: every path"


async def upload(port: int, head: bytes, chunks) -> bytes:
    """Send ``head`` and ``chunks``, then wait for the server's answer without sending more.

    Sending nothing past what the gateway reads keeps its close a FIN: bytes it never read
    would make the kernel answer them with a reset, which can discard the 413 before it is read."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)
    for chunk in chunks:
        writer.write(chunk)
        await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(4096), 30)
    finally:
        writer.close()


async def test_a_body_over_the_bound_is_refused_without_being_read(control):  # noqa: F811
    control.apply([(MODELAPI, "m.yaml")])
    await eventually(lambda: phase(control, "ModelAPI", "llm") == "Ready", timeout=30)
    async with serving(control) as http:
        small = await http.post("/v1/chat/completions", json={"model": "m", "messages": []})
        assert small.status_code == 501, "forwarded (the stand-in answers GET only)"
        port = http.base_url.port
        request = (f"POST /default/modelapi/llm/v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                   "content-type: application/json\r\n").encode()

        # Refused by its Content-Length: answered with no byte of the body sent.
        declared = await upload(port, request + b"content-length: 52428800\r\n\r\n", [])
        assert declared.startswith(b"HTTP/1.1 413"), declared[:200]
        assert str(MODELAPI_MAX_BODY_BYTES).encode() in declared

        # Chunked: answered once the bound is crossed, not after the whole body (which never comes).
        megabyte = b"x" * (1024 * 1024)
        chunks = [b"%x\r\n%s\r\n" % (len(megabyte), megabyte)] * (MODELAPI_MAX_BODY_BYTES // len(megabyte))
        streamed = await upload(port, request + b"transfer-encoding: chunked\r\n\r\n", [*chunks, b"1\r\nx\r\n"])
        assert streamed.startswith(b"HTTP/1.1 413"), streamed[:200]
