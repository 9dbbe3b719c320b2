"""kaos.memory_probe against real servers on 127.0.0.1: what a MemoryStore's status says about
its store and its embedder (answering, refusing, too slow, not PostgreSQL), each bounded by the
timeout, and MemoryProbes re-asking in the background until the answer changes."""

import asyncio
import socket

from aiohttp import web

from kaos.memory_probe import MemoryProbes, probe_embedder, probe_store
from kaos.reconcile.memorystore import Probe, ProbeTarget
from tests.support.polling import eventually


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def serve(handler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/embeddings", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"


async def test_an_embedder_that_answers_or_guards_itself_is_up_and_others_are_named():
    async def answer(request):
        status = {"ok": 200, "guarded": 401, "unknown": 400}[(await request.json())["model"]]
        return web.json_response({"error": {"message": "model not offered"}}, status=status)

    runner, url = await serve(answer)
    try:
        assert await probe_embedder(url, "ok", 3) == ""
        assert await probe_embedder(url, "guarded", 3) == ""
        problem = await probe_embedder(url, "unknown", 3)
        assert problem.startswith(f"{url}/v1/embeddings answered HTTP 400 for model 'unknown'")
    finally:
        await runner.cleanup()
    port = closed_port()
    assert (await probe_embedder(f"http://127.0.0.1:{port}", "m", 3)).startswith(f"cannot reach http://127.0.0.1:{port}")


async def test_a_slow_embedder_is_bounded_by_the_timeout():
    release = asyncio.Event()

    async def stall(request):
        await release.wait()
        return web.json_response({})

    runner, url = await serve(stall)
    try:
        started = asyncio.get_running_loop().time()
        assert await probe_embedder(url, "m", 0.3) == f"{url}/v1/embeddings did not answer within 0.3s"
        assert asyncio.get_running_loop().time() - started < 2
    finally:
        release.set()
        await runner.cleanup()


async def test_a_server_that_is_not_postgresql_is_named(tmp_path):
    async def not_postgres(reader, writer):
        await reader.readexactly(8)
        writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(not_postgres, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        problem = await probe_store(f"postgresql://kaos@127.0.0.1:{port}/kaos", 3)
        assert problem == f"PostgreSQL at 127.0.0.1:{port} answered b'H', not as a PostgreSQL server does"
    finally:
        server.close()
        await server.wait_closed()
    assert await probe_store(f"sqlite://{tmp_path}/memory/team-facts.db", 3) == ""
    assert (tmp_path / "memory").is_dir()
    (tmp_path / "file").write_text("")
    assert "cannot create the folder" in await probe_store(f"sqlite://{tmp_path}/file/x/team-facts.db", 3)
    assert await probe_store("", 3) == "", "an embedded file in an agent's pod is not asked"


async def test_probes_are_asked_again_and_report_a_change():
    answers = [Probe("down", ""), Probe("down", ""), Probe("", "")]
    asked, changed = [], []

    async def ask(target, timeout):
        asked.append(target)
        return answers[min(len(asked), len(answers)) - 1]

    probes = MemoryProbes(changed.append, every=0.01, ask=ask)
    target = ProbeTarget("postgresql://db", "http://embedder", "m")
    try:
        assert probes.known("facts", target) is None
        await eventually(lambda: probes.known("facts", target) == Probe("", ""), timeout=5)
        assert changed == ["facts", "facts"], "told once per different answer, not per probe"
        other = ProbeTarget("postgresql://other", "http://embedder", "m")
        assert probes.known("facts", other) is None, "a new target is asked afresh"
    finally:
        await probes.close()
