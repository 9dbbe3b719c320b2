"""`kaos-runtime agent` / `kaos-runtime mcp`: configured by environment variables only."""

from __future__ import annotations

import logging
import os
import sys

USAGE = """usage: kaos-runtime {agent|mcp}

  agent  the agent service (AGENT_NAME, MODEL_API_URL, MODEL_NAME, ...; see docs/runtime.md)
  mcp    the python-string MCP server (MCP_TOOLS_STRING)

Both listen on HOST (default 0.0.0.0) and PORT (default 8000)."""


def _log_level(env) -> str:
    level = (env.get("AGENT_LOG_LEVEL") or env.get("LOG_LEVEL") or "INFO").strip().upper()
    return level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "INFO"


def _listen(env) -> tuple[str, int]:
    port = env.get("PORT", "8000").strip() or "8000"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"PORT must be a TCP port number, got {port!r}")
    return env.get("HOST", "0.0.0.0").strip() or "0.0.0.0", int(port)


def _serve(app, host: str, port: int, level: str) -> None:
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=level.lower(), access_log=level == "DEBUG",
                server_header=False)


def _agent(env, level: str) -> None:
    from .agent_app import create_app
    from .config import load_agent_config
    from .telemetry import setup_telemetry

    config = load_agent_config(env)
    host, port = _listen(env)
    _serve(create_app(config, setup_telemetry(env, f"agent-{config.name}")), host, port, level)


def _mcp(env, level: str) -> None:
    from .mcp_server import create_mcp_app

    host, port = _listen(env)
    app = create_mcp_app(
        env.get("MCP_TOOLS_STRING", ""),
        name=env.get("MCP_SERVER_NAME", "kaos-python-string"),
        path=env.get("MCP_PATH", "/mcp") or "/mcp",
        log_level=level,
    )
    _serve(app, host, port, level)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if len(args) != 1 or args[0] not in ("agent", "mcp"):
        print(USAGE, file=sys.stderr)
        return 2
    env = os.environ
    level = _log_level(env)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpx2", "httpcore", "LiteLLM"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
    from .config import ConfigError
    from .python_string_tools import ToolsSourceError

    try:
        (_agent if args[0] == "agent" else _mcp)(env, level)
    except (ConfigError, ToolsSourceError, ValueError) as error:
        print(f"kaos-runtime {args[0]}: configuration error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
