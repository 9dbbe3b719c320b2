"""``python -m e2e.port_forward LOCAL_PORT TARGET_PORT``: a loopback TCP forwarder, the local
backend's stand-in for ``kubectl port-forward`` (e2e/conftest.py's ``port_forward``)."""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def _serve(local_port: int, target_port: int) -> None:
    async def forward(client_reader, client_writer):
        try:
            target_reader, target_writer = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, target_writer), _pipe(target_reader, client_writer))

    server = await asyncio.start_server(forward, "127.0.0.1", local_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), int(sys.argv[2])))
