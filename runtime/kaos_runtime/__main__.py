"""`kaos-runtime agent` / `kaos-runtime mcp`: configured by environment variables only."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core.settings import ServerSettings

USAGE = """usage: kaos-runtime {agent|mcp|embeddings [--host H] [--port P] [--model-name NAME]}

  agent       the agent service (AGENT_NAME, MODEL_API_URL, MODEL_NAME, ...; see docs/runtime.md)
  mcp         the python-string MCP server (MCP_TOOLS_STRING)
  embeddings  the offline embedder (all-MiniLM-L6-v2; a ModelAPI with hostedConfig.engine embeddings)

They listen on HOST (default 0.0.0.0; the embedder 127.0.0.1) and PORT (default 8000)."""


def _serve(app, server: ServerSettings, on_exit=None) -> None:
    """Serve ``app``; ``on_exit()`` runs on the event loop as soon as the process is told to stop."""
    import asyncio

    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            if on_exit is not None and not self.should_exit and self._loop is not None:
                self._loop.call_soon_threadsafe(on_exit)
            super().handle_exit(sig, frame)

        async def serve(self, sockets=None) -> None:
            self._loop = asyncio.get_running_loop()
            await super().serve(sockets)

    level = server.log_level
    config = uvicorn.Config(app, host=server.host, port=server.port, log_level=level.lower(),
                            access_log=level == "DEBUG", server_header=False,
                            timeout_graceful_shutdown=server.shutdown_grace)
    serving = Server(config)
    serving._loop = None
    serving.run()


def _agent(server: ServerSettings) -> None:
    from .core.settings import AgentSettings, TelemetrySettings
    from .core.telemetry import setup_telemetry
    from .service.app import create_app

    settings = AgentSettings.from_env()
    telemetry = setup_telemetry(TelemetrySettings.from_env(), f"agent-{settings.name}")
    app = create_app(settings, telemetry)
    _serve(app, server, on_exit=app.state.runtime.stopping)


def _mcp(server: ServerSettings) -> None:
    from .core.settings import McpServerSettings
    from .mcp_server.server import create_mcp_app

    settings = McpServerSettings.from_env()
    app = create_mcp_app(settings.tools_source, name=settings.server_name, path=settings.path,
                         log_level=server.log_level, auth=settings.auth)
    _serve(app, server)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args and args[0] == "embeddings":
        from .engines.embeddings_server import main as embeddings

        embeddings(args[1:])
        return 0
    if len(args) != 1 or args[0] not in ("agent", "mcp"):
        print(USAGE, file=sys.stderr)
        return 2
    from .core.settings import ServerSettings

    try:
        server = ServerSettings.from_env()
        level = server.log_level
        logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        for noisy in ("httpx", "httpx2", "httpcore", "LiteLLM"):
            logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
        (_agent if args[0] == "agent" else _mcp)(server)
    except ValueError as error:  # ConfigError (settings), ToolsSourceError (MCP_TOOLS_STRING)
        print(f"kaos-runtime {args[0]}: configuration error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
