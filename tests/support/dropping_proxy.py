"""A TCP proxy on 127.0.0.1 that drops a connection after its request has reached the server:
the first ``drops`` requests whose bytes contain ``marker`` are passed on, and when the server's
answer comes, the client's connection is closed without it (as a network failure after the
server did the work would). Everything else passes both ways. Runs its own event loop in a
thread; ``dropped`` counts the connections it cut."""

from __future__ import annotations

import asyncio
import threading

from kaos.local.ports import free_port


class DroppingProxy:
    def __init__(self, upstream_port: int, marker: bytes, drops: int = 1) -> None:
        self.upstream_port = upstream_port
        self.marker = marker
        self.drops = drops
        self.dropped = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server = None

    def __enter__(self) -> "DroppingProxy":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *_) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        self._server.close()

    async def _serve(self, client_reader, client_writer) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        armed = asyncio.Event()  # a marked request went up: cut the connection when its answer comes

        async def up() -> None:
            seen = b""
            while data := await client_reader.read(65536):
                seen = seen[-len(self.marker):] + data
                if self.marker in seen and self.dropped < self.drops:
                    self.dropped += 1
                    armed.set()
                upstream_writer.write(data)
                await upstream_writer.drain()
            upstream_writer.close()

        async def down() -> None:
            while data := await upstream_reader.read(65536):
                if armed.is_set():
                    client_writer.transport.abort()
                    upstream_writer.transport.abort()
                    return
                client_writer.write(data)
                await client_writer.drain()
            client_writer.close()

        await asyncio.gather(up(), down(), return_exceptions=True)
