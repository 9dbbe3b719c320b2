"""Every environment variable the runtime reads: its name, its type and its default, here only.

pydantic-settings models (the variables are listed in docs/runtime.md):

- ``AgentSettings`` with ``MemorySettings`` (and ``LongTermMemorySettings``, ...): ``kaos-runtime agent``;
- ``McpServerSettings``: ``kaos-runtime mcp``, the python-string MCP server;
- ``ServerSettings``: ``HOST``, ``PORT`` and the log level of both;
- ``TelemetrySettings``: the ``OTEL_*`` variables the runtime decides with (the OpenTelemetry
  SDK reads the standard ones itself).

``Model.from_env(env)`` reads a mapping (``os.environ`` by default): a field is read from
the variable its ``validation_alias`` names, a blank variable counts as unset, and a wrong
value is a ``ConfigError`` whose one line names the variable. Building a model directly
(``MemorySettings(max_sessions=2)``) takes the values given and reads no environment. The
families ``PEER_AGENT_<NAME>_CARD_URL`` and ``MCP_SERVER_<NAME>_URL`` are read by hand in
``AgentSettings.from_env``; ``A2A_PEER_URLS`` (peers reached by URL over A2A) is a plain list.

The step and memory defaults and bounds are the Agent CRD's (charts/kaos/files/crds/agent.yaml):
``agent_crd.FIELDS``, which scripts/generate writes from it, so that the runtime run alone
behaves as a resource that leaves them out.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Mapping
from urllib.parse import urlsplit, urlunsplit

from pydantic import AliasChoices, BeforeValidator, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

from .agent_crd import FIELDS as AGENT_CRD_FIELDS
from .api_keys import parse_api_keys
from .approval_entries import approval_entry
from .grants import rules as access_rules
from .mock_responses import check_scripted
from .principal import entries as principal_entries

CARD_SUFFIXES = ("/.well-known/agent-card.json", "/.well-known/agent.json", "/.well-known/agent")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(ValueError):
    """A user mistake in the environment; the message names the variable."""


def _trimmed(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _log_level(value: Any) -> Any:
    """A level name in any case; anything else falls back to INFO (as it always has)."""
    level = _trimmed(value).upper() if isinstance(value, str) else value
    return level if level in LOG_LEVELS else "INFO"


def _auto(value: Any) -> Any:
    """``auto`` (any case) is None: the setting decides from the others."""
    return None if isinstance(value, str) and value.strip().lower() == "auto" else _trimmed(value)


Trimmed = Annotated[str, BeforeValidator(_trimmed)]
Flag = Annotated[bool, BeforeValidator(_trimmed)]  # true/false, yes/no, on/off, 1/0, any case
ModelClientName = Annotated[Literal["direct", "acompletion"], BeforeValidator(lambda v: _trimmed(v).lower())]
ToolCallingMode = Annotated[Literal["auto", "native", "fenced"], BeforeValidator(lambda v: _trimmed(v).lower())]
MemoryBackend = Annotated[Literal["local", "redis"], BeforeValidator(lambda v: _trimmed(v).lower())]
TokenizerName = Annotated[Literal["auto", "estimate"], BeforeValidator(lambda v: _trimmed(v).lower())]
REDIS_URL_SCHEMES = ("redis://", "rediss://", "unix://")
LogLevel = Annotated[str, BeforeValidator(_log_level)]


@dataclass(frozen=True)
class Peer:
    name: str
    card_url: str
    base_url: str


@dataclass(frozen=True)
class McpServer:
    name: str
    url: str
    # Bearer token sent to this server (MCP_SERVER_<NAME>_TOKEN); kept out of repr and logs.
    token: str = field(default="", repr=False)
    # MCP_SERVER_<NAME>_IDENTITY=forward (the MCPServer's spec.identity): each tool call carries
    # the caller's identity, signed with the token (clients/mcp_identity.py).
    forward_identity: bool = False


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping. Only fields with a
    validation alias (the variable's name) are variables; a blank value counts as unset."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._env = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str]:
        return {name: value for name, value in self._env.items() if value.strip()}

    def get_field_value(self, field, field_name: str) -> tuple[Any, str, bool]:
        if field.validation_alias is None:  # derived in from_env, not a variable
            return None, field_name, False
        return super().get_field_value(field, field_name)


_PROBLEMS = {
    "int_parsing": "must be an integer",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "literal_error": "must be {expected}",
}


def _one_line(error: ValidationError) -> str:
    """Each wrong variable, named, with what it must be and what it was."""
    problems = []
    for item in error.errors(include_url=False):
        if item["type"] == "value_error":  # raised by a validator below; it names the variable
            problems.append(str(item["ctx"]["error"]))
            continue
        variable = ".".join(str(part) for part in item["loc"])
        problem = _PROBLEMS.get(item["type"], "is invalid ({msg})").format(msg=item["msg"], **item.get("ctx", {}))
        problems.append(f"{variable} {problem}, got {item['input']!r}")
    return "; ".join(problems)


def _from_agent_crd(variable: str) -> Any:
    """A field read from ``variable`` with the Agent CRD's default and bounds."""
    return Field(validation_alias=variable, **AGENT_CRD_FIELDS[variable])


class _Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=True, frozen=True, populate_by_name=True)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, **other_sources):
        return (init_settings,)  # the environment is read by from_env only

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None):
        """The settings in ``env`` (default ``os.environ``); ConfigError naming what is wrong."""
        env = os.environ if env is None else env
        values = {**_Environment(cls, env)(), **cls._derived(env)}
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            raise ConfigError(_one_line(error)) from None

    @classmethod
    def _derived(cls, env: Mapping[str, str]) -> dict[str, Any]:
        """Values that no single variable holds (nested settings, variable families)."""
        return {}


class ServerSettings(_Settings):
    """Where a runtime process listens and how much it logs (both commands)."""

    host: Trimmed = Field("0.0.0.0", validation_alias="HOST")
    port: int = Field(8000, ge=1, le=65535, validation_alias="PORT")
    log_level: LogLevel = Field("INFO", validation_alias=AliasChoices("AGENT_LOG_LEVEL", "LOG_LEVEL"))
    # On SIGTERM: requests and streams still open after this many seconds are cancelled.
    shutdown_grace: float = Field(5.0, ge=0, validation_alias="SHUTDOWN_GRACE_SECONDS")


class MemorySettings(_Settings):
    enabled: Flag = _from_agent_crd("MEMORY_ENABLED")
    context_limit: int = _from_agent_crd("MEMORY_CONTEXT_LIMIT")
    max_sessions: int = _from_agent_crd("MEMORY_MAX_SESSIONS")
    max_session_events: int = _from_agent_crd("MEMORY_MAX_SESSION_EVENTS")
    # Where events live: "local" (this process) or "redis" (shared by replicas, kept across restarts).
    backend: MemoryBackend = Field("local", validation_alias="MEMORY_BACKEND")
    redis_url: SecretStr = Field("", validation_alias="REDIS_URL")
    # Keys are <prefix>:sessions, <prefix>:seq, <prefix>:session:<id>; empty: kaos:agent:<AGENT_NAME>.
    key_prefix: Trimmed = Field("", validation_alias="MEMORY_KEY_PREFIX")
    # A session idle this long is forgotten (Redis expires its keys); 0: never.
    ttl_seconds: int = Field(0, ge=0, validation_alias="MEMORY_TTL_SECONDS")
    redis_timeout: float = Field(2.0, gt=0, validation_alias="MEMORY_REDIS_TIMEOUT_SECONDS")

    @model_validator(mode="after")
    def _redis_needs_url(self) -> "MemorySettings":
        url = self.redis_url.get_secret_value().strip()
        if self.backend == "redis" and not url:
            raise ValueError("REDIS_URL is not set (MEMORY_BACKEND=redis needs it, e.g. redis://127.0.0.1:6379/0)")
        if url and not url.startswith(REDIS_URL_SCHEMES):
            raise ValueError(f"REDIS_URL must start with {', '.join(REDIS_URL_SCHEMES)}")
        return self


class ContextSettings(_Settings):
    """What the model sees: a token budget (context/, docs/memory.md "Context and compaction")."""

    # The model's context window in tokens (spec.config.contextWindow); 0: litellm's model map, else 8192.
    window: int = Field(0, ge=0, validation_alias="MODEL_CONTEXT_WINDOW")
    # auto: tiktoken for the models it knows (OpenAI's), else the server's own count (llama.cpp), else the
    # estimate; estimate: always the estimate.
    tokenizer: TokenizerName = Field("auto", validation_alias="MODEL_TOKENIZER")
    # Older history summarized once it passes threshold_percent of the input budget (spec.memory.compaction).
    compaction: Flag = Field(False, validation_alias="MEMORY_COMPACTION")
    compaction_threshold_percent: int = Field(50, ge=1, le=100, validation_alias="MEMORY_COMPACTION_THRESHOLD_PERCENT")
    # The model that writes the summary (same ModelAPI); empty: the agent's own.
    compaction_model: Trimmed = Field("", validation_alias="MEMORY_COMPACTION_MODEL")


class BudgetSettings(_Settings):
    """Token budgets checked before each model call (budget/); 0: no limit."""

    tokens_per_minute: int = Field(0, ge=0, validation_alias="BUDGET_TOKENS_PER_MINUTE")
    tokens_per_day: int = Field(0, ge=0, validation_alias="BUDGET_TOKENS_PER_DAY")
    # The same for each caller identity on its own.
    caller_tokens_per_minute: int = Field(0, ge=0, validation_alias="BUDGET_CALLER_TOKENS_PER_MINUTE")
    caller_tokens_per_day: int = Field(0, ge=0, validation_alias="BUDGET_CALLER_TOKENS_PER_DAY")
    # The ModelAPI's budget, for everything that uses it (shared through Redis when the memory is there).
    model_api: Trimmed = Field("", validation_alias="BUDGET_MODELAPI")
    model_api_tokens_per_minute: int = Field(0, ge=0, validation_alias="BUDGET_MODELAPI_TOKENS_PER_MINUTE")
    model_api_tokens_per_day: int = Field(0, ge=0, validation_alias="BUDGET_MODELAPI_TOKENS_PER_DAY")
    # Prefix of the Redis keys of the counts (MEMORY_BACKEND=redis).
    key_prefix: Trimmed = Field("kaos:budget", validation_alias="BUDGET_KEY_PREFIX")


class AuthSettings(_Settings):
    """Bearer authentication of the runtime's endpoints (core/auth.py); nothing set: open."""

    # Comma (or newline) separated API keys (core/api_keys.py); a Secret's value through secretKeyRef.
    api_keys_value: SecretStr = Field("", validation_alias="AUTH_API_KEYS")
    # OIDC (core/oidc.py): access tokens of this issuer, for this audience; its keys from this JWKS,
    # or from the jwks_uri of the issuer's discovery document when unset.
    oidc_issuer: Trimmed = Field("", validation_alias="AUTH_OIDC_ISSUER")
    oidc_audience: Trimmed = Field("", validation_alias="AUTH_OIDC_AUDIENCE")
    oidc_jwks_url: Trimmed = Field("", validation_alias="AUTH_OIDC_JWKS_URL")
    # The claims that name the user (user:<value>) and list its groups (group:<value>).
    oidc_user_claim: Trimmed = Field("sub", min_length=1, validation_alias="AUTH_OIDC_USER_CLAIM")
    oidc_groups_claim: Trimmed = Field("groups", min_length=1, validation_alias="AUTH_OIDC_GROUPS_CLAIM")
    # How far past its expiry a token is still accepted (clock skew between issuer and agent).
    oidc_leeway_seconds: float = Field(30.0, ge=0, le=300, validation_alias="AUTH_OIDC_LEEWAY_SECONDS")
    # The agent's own credential, sent as a bearer token when it delegates (the chart also
    # gives it to the agent as MODEL_API_KEY and MCP_SERVER_<NAME>_TOKEN; see docs/runtime.md).
    outbound_token: SecretStr = Field("", validation_alias="AUTH_OUTBOUND_TOKEN")
    # Principals that may read every session, memory event and approval (core/principal.py).
    admins: Annotated[tuple[str, ...], NoDecode] = Field((), validation_alias="AUTH_ADMINS")
    # spec.access as JSON (core/grants.py): who may chat, read, approve, administer; empty: no grants needed.
    access_rules: str = Field("", validation_alias="ACCESS_RULES")

    @property
    def enabled(self) -> bool:
        """Requests must authenticate (API keys or OIDC): the ownership rules apply."""
        return bool(self.api_keys() or self.oidc_enabled)

    @property
    def oidc_enabled(self) -> bool:
        return bool(self.oidc_issuer or self.oidc_jwks_url)

    @field_validator("admins", mode="before")
    @classmethod
    def _admins(cls, value: Any) -> Any:
        return principal_entries(value, "AUTH_ADMINS") if isinstance(value, str) else value

    @field_validator("access_rules")
    @classmethod
    def _access_rules(cls, value: str) -> str:
        access_rules(value)  # a mistake: ValueError naming the rule and field
        return value

    def api_keys(self) -> list[tuple[str, str]]:
        """(name, key): the name is the key's place in the list (1, 2, ...), never the key."""
        return [(str(number), key)
                for number, key in enumerate(parse_api_keys(self.api_keys_value.get_secret_value()), start=1)]

    @field_validator("oidc_jwks_url", "oidc_issuer")
    @classmethod
    def _https_or_http(cls, value: str, info) -> str:
        if value and not value.startswith(("https://", "http://")):
            variable = {"oidc_jwks_url": "AUTH_OIDC_JWKS_URL", "oidc_issuer": "AUTH_OIDC_ISSUER"}[info.field_name]
            raise ValueError(f"{variable} must be an http(s) URL")
        return value


OnTimeout = Annotated[Literal["reject", "proceed"], BeforeValidator(lambda v: _trimmed(v).lower())]


class ApprovalSettings(_Settings):
    """Which tool calls wait for a person's decision (kaos_runtime.approvals; docs/runtime.md,
    "Approvals"); nothing set: none."""

    # Comma list of tool names, `*` (every MCP tool), `mcp:<server>` (its tools), `peer:<name>` / `peer:*` (delegation).
    required: Annotated[tuple[str, ...], NoDecode] = Field((), validation_alias="TOOL_APPROVAL_REQUIRED")
    # Also every tool whose MCP annotations say destructiveHint true and not readOnlyHint true.
    from_annotations: Flag = Field(False, validation_alias="TOOL_APPROVAL_FROM_ANNOTATIONS")
    timeout_seconds: int = Field(600, ge=1, validation_alias="TOOL_APPROVAL_TIMEOUT_SECONDS")
    on_timeout: OnTimeout = Field("reject", validation_alias="TOOL_APPROVAL_ON_TIMEOUT")
    # The principals that may decide (core/principal.py); empty: any authenticated one but the requester.
    approvers: Annotated[tuple[str, ...], NoDecode] = Field((), validation_alias="TOOL_APPROVAL_APPROVERS")

    @property
    def enabled(self) -> bool:
        return bool(self.required) or self.from_annotations

    @field_validator("approvers", mode="before")
    @classmethod
    def _approvers(cls, value: Any) -> Any:
        return principal_entries(value, "TOOL_APPROVAL_APPROVERS") if isinstance(value, str) else value

    @field_validator("required", mode="before")
    @classmethod
    def _entries(cls, value: Any) -> Any:
        """TOOL_APPROVAL_REQUIRED: entries (core/approval_entries.py) separated by commas, each once."""
        parts = value.split(",") if isinstance(value, str) else list(value)
        entries = tuple(dict.fromkeys(part.strip() for part in parts if part.strip()))
        for entry in entries:
            try:
                approval_entry(entry)
            except ValueError as error:
                raise ValueError(f"TOOL_APPROVAL_REQUIRED: {error}") from None
        return entries


LongTermScope = Annotated[Literal["user", "agent", "namespace"], BeforeValidator(lambda v: _trimmed(v).lower())]
LONG_TERM_STORE_SCHEMES = ("postgresql://", "postgres://", "sqlite:///")


class LongTermMemorySettings(_Settings):
    """Memories that outlive a session, in a vector store (kaos_runtime.long_term; a MemoryStore
    resource sets these; docs/memory.md, "Long-term memory"); off unless enabled."""

    enabled: Flag = Field(False, validation_alias="LONG_TERM_MEMORY_ENABLED")
    # postgresql://user:pass@host:port/db (pgvector) or sqlite:///abs/path.db (embedded, no server).
    store_url: SecretStr = Field("", validation_alias="LONG_TERM_MEMORY_STORE_URL")
    # The table the store's memories live in (the MemoryStore's <namespace>-<name>): stores sharing a database never mix.
    collection: Trimmed = Field("kaos-memories", validation_alias="LONG_TERM_MEMORY_COLLECTION")
    scope: LongTermScope = Field("user", validation_alias="LONG_TERM_MEMORY_SCOPE")
    # An OpenAI-compatible ModelAPI's base URL (POST {url}/v1/embeddings) and the model it embeds with.
    embedding_url: Trimmed = Field("", validation_alias="LONG_TERM_MEMORY_EMBEDDING_URL")
    embedding_model: Trimmed = Field("", validation_alias="LONG_TERM_MEMORY_EMBEDDING_MODEL")
    # Who extracts durable facts from a turn; empty: the agent's own model (MODEL_API_URL, MODEL_NAME).
    extraction_url: Trimmed = Field("", validation_alias="LONG_TERM_MEMORY_EXTRACTION_URL")
    extraction_model: Trimmed = Field("", validation_alias="LONG_TERM_MEMORY_EXTRACTION_MODEL")
    # Memories older than this many days are dropped; 0: kept.
    retention_days: int = Field(0, ge=0, validation_alias="LONG_TERM_MEMORY_RETENTION_DAYS")
    top_k: int = Field(5, ge=1, le=100, validation_alias="LONG_TERM_MEMORY_TOP_K")
    # How long one call to the store or the embedder may take before the turn goes on without it.
    timeout: float = Field(5.0, gt=0, validation_alias="LONG_TERM_MEMORY_TIMEOUT_SECONDS")

    @model_validator(mode="after")
    def _complete(self) -> "LongTermMemorySettings":
        if not self.enabled:
            return self
        url = self.store_url.get_secret_value().strip()
        if not url:
            raise ValueError("LONG_TERM_MEMORY_STORE_URL is not set (LONG_TERM_MEMORY_ENABLED=true needs it, "
                             "e.g. sqlite:///var/lib/kaos/memories.db or postgresql://user:pass@host:5432/db)")
        if not url.startswith(LONG_TERM_STORE_SCHEMES):
            raise ValueError(f"LONG_TERM_MEMORY_STORE_URL must start with {', '.join(LONG_TERM_STORE_SCHEMES)} "
                             "(sqlite:/// then an absolute path)")
        if not self.embedding_url.startswith(("http://", "https://")):
            raise ValueError("LONG_TERM_MEMORY_EMBEDDING_URL must be the http(s) base URL of an OpenAI-compatible "
                             "ModelAPI (LONG_TERM_MEMORY_ENABLED=true needs it)")
        if not self.embedding_model:
            raise ValueError("LONG_TERM_MEMORY_EMBEDDING_MODEL is not set (LONG_TERM_MEMORY_ENABLED=true needs it)")
        if self.extraction_url and not self.extraction_url.startswith(("http://", "https://")):
            raise ValueError("LONG_TERM_MEMORY_EXTRACTION_URL must be an http(s) base URL")
        return self


class AgentSettings(_Settings):
    """``kaos-runtime agent``."""

    name: Trimmed = Field("agent", validation_alias="AGENT_NAME")
    description: str = Field("", validation_alias="AGENT_DESCRIPTION")
    instructions: str = Field("", validation_alias="AGENT_INSTRUCTIONS")
    model_api_url: Trimmed = Field("", validation_alias="MODEL_API_URL")
    model_name: Trimmed = Field("", validation_alias="MODEL_NAME")
    api_key: SecretStr = Field("sk-kaos-no-key", validation_alias=AliasChoices("MODEL_API_KEY", "OPENAI_API_KEY"))
    max_steps: int = _from_agent_crd("AGENTIC_LOOP_MAX_STEPS")
    peers: tuple[Peer, ...] = ()
    # A2A agents reached by URL (their base or card URL); their names come from their cards (clients/a2a_peer.py).
    a2a_peers: Annotated[tuple[str, ...], NoDecode] = Field((), validation_alias="A2A_PEER_URLS")
    mcp_servers: tuple[McpServer, ...] = ()
    memory: MemorySettings = Field(default_factory=MemorySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    approval: ApprovalSettings = Field(default_factory=ApprovalSettings)
    long_term: LongTermMemorySettings = Field(default_factory=LongTermMemorySettings)
    # Each entry a reply text, or {"content", "tool_calls"} (a native tool call; see core/mock_responses.py).
    mock_responses: Annotated[tuple[str | dict, ...] | None, NoDecode] = Field(None, validation_alias="DEBUG_MOCK_RESPONSES")
    max_body_bytes: int = Field(1024 * 1024, ge=1, validation_alias="MAX_REQUEST_BODY_BYTES")
    max_delegation_depth: int = Field(3, ge=0, validation_alias="MAX_DELEGATION_DEPTH")
    model_timeout: float = Field(120.0, ge=0, validation_alias="MODEL_TIMEOUT_SECONDS")
    model_max_retries: int = Field(2, ge=0, validation_alias="MODEL_MAX_RETRIES")
    model_retry_backoff: float = Field(0.25, ge=0, validation_alias="MODEL_RETRY_BACKOFF_SECONDS")
    model_client: ModelClientName = Field("direct", validation_alias="MODEL_CLIENT")
    # auto: build the model client before /ready answers when a model is configured and replies are not scripted.
    model_preload: Annotated[bool | None, BeforeValidator(_auto)] = Field(None, validation_alias="MODEL_PRELOAD")
    # auto: native tool calling when litellm's model map says the model supports function calling; native/fenced force it.
    tool_calling: ToolCallingMode = Field("auto", validation_alias="MODEL_TOOL_CALLING")
    peer_timeout: float = Field(120.0, ge=0, validation_alias="PEER_TIMEOUT_SECONDS")
    tool_timeout: float = Field(60.0, ge=0, validation_alias="TOOL_TIMEOUT_SECONDS")
    # Prometheus metrics at /metrics; false: /metrics answers 404 and nothing is counted.
    metrics_enabled: Flag = Field(True, validation_alias="METRICS_ENABLED")

    @model_validator(mode="after")
    def _grants_need_authentication(self) -> "AgentSettings":
        """Admins and approvers are principals, which only authentication tells apart."""
        granted = [name for name, given in (("AUTH_ADMINS", self.auth.admins),
                                            ("TOOL_APPROVAL_APPROVERS", self.approval.approvers),
                                            ("ACCESS_RULES", self.auth.access_rules.strip())) if given]
        if granted and not self.auth.enabled:
            raise ValueError(f"{' and '.join(granted)} {'name' if len(granted) > 1 else 'names'} principals, but "
                             "authentication is off (set AUTH_API_KEYS or AUTH_OIDC_ISSUER): without it every "
                             "caller is anonymous")
        return self

    @property
    def preload(self) -> bool:
        """Build the model client before reporting ready (MODEL_PRELOAD, default auto)."""
        if self.model_preload is not None:
            return self.model_preload
        return bool(self.model_api_url) and self.mock_responses is None

    @field_validator("mock_responses", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """DEBUG_MOCK_RESPONSES: a JSON list of replies (strings, or objects with native tool calls)."""
        if not isinstance(value, str):
            return value
        try:
            value = json.loads(value)
        except ValueError as error:
            raise ValueError(f"DEBUG_MOCK_RESPONSES is not valid JSON: {error}") from None
        if not isinstance(value, list):
            raise ValueError("DEBUG_MOCK_RESPONSES must be a JSON list of strings (or of {content, tool_calls} objects)")
        return tuple(check_scripted(item, index) for index, item in enumerate(value))

    @field_validator("a2a_peers", mode="before")
    @classmethod
    def _url_list(cls, value: Any) -> Any:
        """A2A_PEER_URLS: http(s) URLs separated by commas or white space, each once."""
        if not isinstance(value, str):
            return value
        urls = tuple(dict.fromkeys(url for url in re.split(r"[\s,]+", value) if url))
        wrong = [url for url in urls if not url.startswith(("http://", "https://"))]
        if wrong:
            raise ValueError(f"A2A_PEER_URLS must hold http(s) URLs, got {', '.join(map(repr, wrong))}")
        return urls

    @classmethod
    def _derived(cls, env: Mapping[str, str]) -> dict[str, Any]:
        peers = tuple(
            Peer(name=name, card_url=url, base_url=peer_base_url(url))
            for name, url in _listed_urls(env, "PEER_AGENTS", "PEER_AGENT_{key}_CARD_URL", "peer")
        )
        servers = tuple(
            McpServer(name=name, url=mcp_url(url), token=env.get(f"MCP_SERVER_{env_key(name)}_TOKEN", "").strip(),
                      forward_identity=_identity_mode(env, name) == "forward")
            for name, url in _listed_urls(env, "MCP_SERVERS", "MCP_SERVER_{key}_URL", "server")
        )
        return {"memory": MemorySettings.from_env(env), "context": ContextSettings.from_env(env), "budget": BudgetSettings.from_env(env),
                "auth": AuthSettings.from_env(env), "approval": ApprovalSettings.from_env(env),
                "long_term": LongTermMemorySettings.from_env(env),
                "peers": peers, "mcp_servers": servers}


def _identity_mode(env: Mapping[str, str], server: str) -> str:
    """``MCP_SERVER_<NAME>_IDENTITY``: ``forward`` or ``none`` (unset: none); ConfigError otherwise."""
    variable = f"MCP_SERVER_{env_key(server)}_IDENTITY"
    mode = env.get(variable, "").strip() or "none"
    if mode not in ("none", "forward"):
        raise ConfigError(f"{variable} must be forward or none, got {mode!r}")
    return mode


class McpServerSettings(_Settings):
    """``kaos-runtime mcp``: the python-string MCP server."""

    tools_source: str = Field("", validation_alias="MCP_TOOLS_STRING")
    server_name: str = Field("kaos-python-string", validation_alias="MCP_SERVER_NAME")
    path: str = Field("/mcp", validation_alias="MCP_PATH")
    # Bearer authentication of the MCP endpoint (AUTH_API_KEYS, AUTH_OIDC_*), as for agents.
    auth: AuthSettings = Field(default_factory=AuthSettings)

    @classmethod
    def _derived(cls, env: Mapping[str, str]) -> dict[str, Any]:
        return {"auth": AuthSettings.from_env(env)}


class TelemetrySettings(_Settings):
    """The OTEL_* variables that decide whether the runtime exports traces; the SDK reads the
    standard ones itself (endpoint, headers, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, ...)."""

    sdk_disabled: Trimmed = Field("", validation_alias="OTEL_SDK_DISABLED")
    endpoint: str = Field("", validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT",
                                                            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    protocol: str = Field("", validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                                                            "OTEL_EXPORTER_OTLP_PROTOCOL"))
    service_name: str = Field("", validation_alias="OTEL_SERVICE_NAME")

    @property
    def enabled(self) -> bool:
        """On with an OTLP endpoint or OTEL_SDK_DISABLED=false; OTEL_SDK_DISABLED=true wins."""
        disabled = self.sdk_disabled.lower()
        if disabled == "true":
            return False
        return disabled == "false" or bool(self.endpoint)


def env_key(name: str) -> str:
    """`worker-1` -> `WORKER_1`: how a peer or MCP server name appears in a variable name."""
    return name.strip().upper().replace("-", "_").replace(".", "_")


def mcp_url(url: str) -> str:
    """The MCP endpoint of ``MCP_SERVER_<NAME>_URL``: a base URL without a path (upstream KAOS's
    shape, ``http://mcpserver-echo:8000``) gets ``/mcp`` appended; a URL with a path is kept."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path="/mcp"))
    return url


def peer_base_url(card_url: str) -> str:
    """The peer's base URL: its card URL without the `/.well-known/agent[.json]` or
    `/.well-known/agent-card.json` suffix."""
    url = card_url.rstrip("/")
    for suffix in CARD_SUFFIXES:
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def _listed_urls(env: Mapping[str, str], list_variable: str, url_variable: str, what: str) -> list[tuple[str, str]]:
    """(name, url) for each name in the comma list ``list_variable``; ``url_variable`` has a
    ``{key}`` slot for the name as it appears in a variable name."""
    listed = []
    for name in (part.strip() for part in env.get(list_variable, "").split(",")):
        if not name:
            continue
        variable = url_variable.format(key=env_key(name))
        url = env.get(variable, "").strip()
        if not url:
            raise ConfigError(f"{variable} is not set ({what} {name!r} is listed in {list_variable})")
        listed.append((name, url))
    return listed
