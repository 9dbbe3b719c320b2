"""Agent configuration, read only from environment variables (see docs/runtime.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

CARD_SUFFIXES = ("/.well-known/agent.json", "/.well-known/agent")


class ConfigError(ValueError):
    """A user mistake in the environment; the message names the variable."""


@dataclass(frozen=True)
class Peer:
    name: str
    card_url: str
    base_url: str


@dataclass(frozen=True)
class McpServer:
    name: str
    url: str


@dataclass(frozen=True)
class MemoryConfig:
    enabled: bool = True
    context_limit: int = 6
    max_sessions: int = 1000
    max_session_events: int = 500


@dataclass(frozen=True)
class AgentConfig:
    name: str = "agent"
    description: str = ""
    instructions: str = ""
    model_api_url: str = ""
    model_name: str = ""
    max_steps: int = 5
    peers: tuple[Peer, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    mock_responses: tuple[str, ...] | None = None
    max_body_bytes: int = 1024 * 1024
    max_delegation_depth: int = 3
    model_timeout: float = 120.0
    model_max_retries: int = 2
    model_retry_backoff: float = 0.25
    model_client: str = "direct"
    model_preload: bool = False
    peer_timeout: float = 120.0
    tool_timeout: float = 60.0


def env_key(name: str) -> str:
    """`worker-1` -> `WORKER_1`: how a peer or MCP server name appears in a variable name."""
    return name.strip().upper().replace("-", "_").replace(".", "_")


def peer_base_url(card_url: str) -> str:
    """The peer's base URL: its card URL without the `/.well-known/agent[.json]` suffix."""
    url = card_url.rstrip("/")
    for suffix in CARD_SUFFIXES:
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def _names(env: Mapping[str, str], variable: str) -> list[str]:
    return [part.strip() for part in env.get(variable, "").split(",") if part.strip()]


def _int(env: Mapping[str, str], variable: str, default: int, minimum: int = 0) -> int:
    raw = env.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{variable} must be at least {minimum}, got {value}")
    return value


def _float(env: Mapping[str, str], variable: str, default: float) -> float:
    raw = env.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be a number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{variable} must not be negative, got {value}")
    return value


def _bool(env: Mapping[str, str], variable: str, default: bool) -> bool:
    raw = env.get(variable, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{variable} must be true or false, got {raw!r}")


def parse_mock_responses(raw: str | None) -> tuple[str, ...] | None:
    """DEBUG_MOCK_RESPONSES: a JSON list of strings, or unset."""
    if raw is None or not raw.strip():
        return None
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise ConfigError(f"DEBUG_MOCK_RESPONSES is not valid JSON: {error}") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError("DEBUG_MOCK_RESPONSES must be a JSON list of strings")
    return tuple(value)


def _listed_urls(env: Mapping[str, str], list_variable: str, url_variable: str, what: str) -> list[tuple[str, str]]:
    """(name, url) for each name in ``list_variable``; ``url_variable`` has a ``{key}`` slot."""
    listed = []
    for name in _names(env, list_variable):
        variable = url_variable.format(key=env_key(name))
        url = env.get(variable, "").strip()
        if not url:
            raise ConfigError(f"{variable} is not set ({what} {name!r} is listed in {list_variable})")
        listed.append((name, url))
    return listed


def _peers(env: Mapping[str, str]) -> tuple[Peer, ...]:
    return tuple(
        Peer(name=name, card_url=url, base_url=peer_base_url(url))
        for name, url in _listed_urls(env, "PEER_AGENTS", "PEER_AGENT_{key}_CARD_URL", "peer")
    )


def _mcp_servers(env: Mapping[str, str]) -> tuple[McpServer, ...]:
    return tuple(
        McpServer(name=name, url=url)
        for name, url in _listed_urls(env, "MCP_SERVERS", "MCP_SERVER_{key}_URL", "server")
    )


def load_agent_config(env: Mapping[str, str]) -> AgentConfig:
    model_client = env.get("MODEL_CLIENT", "direct").strip().lower() or "direct"
    if model_client not in ("direct", "acompletion"):
        raise ConfigError(f"MODEL_CLIENT must be 'direct' or 'acompletion', got {model_client!r}")
    return AgentConfig(
        name=env.get("AGENT_NAME", "agent").strip() or "agent",
        description=env.get("AGENT_DESCRIPTION", ""),
        instructions=env.get("AGENT_INSTRUCTIONS", ""),
        model_api_url=env.get("MODEL_API_URL", "").strip(),
        model_name=env.get("MODEL_NAME", "").strip(),
        max_steps=_int(env, "AGENTIC_LOOP_MAX_STEPS", 5, minimum=1),
        peers=_peers(env),
        mcp_servers=_mcp_servers(env),
        memory=MemoryConfig(
            enabled=_bool(env, "MEMORY_ENABLED", True),
            context_limit=_int(env, "MEMORY_CONTEXT_LIMIT", 6),
            max_sessions=_int(env, "MEMORY_MAX_SESSIONS", 1000, minimum=1),
            max_session_events=_int(env, "MEMORY_MAX_SESSION_EVENTS", 500, minimum=1),
        ),
        mock_responses=parse_mock_responses(env.get("DEBUG_MOCK_RESPONSES")),
        max_body_bytes=_int(env, "MAX_REQUEST_BODY_BYTES", 1024 * 1024, minimum=1),
        max_delegation_depth=_int(env, "MAX_DELEGATION_DEPTH", 3),
        model_timeout=_float(env, "MODEL_TIMEOUT_SECONDS", 120.0),
        model_max_retries=_int(env, "MODEL_MAX_RETRIES", 2),
        model_retry_backoff=_float(env, "MODEL_RETRY_BACKOFF_SECONDS", 0.25),
        model_client=model_client,
        model_preload=_bool(env, "MODEL_PRELOAD", False),
        peer_timeout=_float(env, "PEER_TIMEOUT_SECONDS", 120.0),
        tool_timeout=_float(env, "TOOL_TIMEOUT_SECONDS", 60.0),
    )
